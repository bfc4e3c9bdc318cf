package kernel

import "sync"

// liveVotes counts, per approval id, the votes this kernel is recording
// right now, each from before its commit until the resume that follows an
// approving one has returned (recordVote). A call whose approving vote has
// committed but whose allow decision has not (dispatching, no decision
// receipt) is then either held here, because the live resume that will
// decide it is still running, or has no live resume on this kernel at all
// (it returned having failed, or the vote was another replica's). Only
// the second kind may be taken by the look for stranded calls after a lost
// claim (ownStranded): a call read undecided was approved by a vote that
// committed before the read, so the resume of that vote registered here
// before the read and has not left while it is still registered.
type liveVotes struct {
	mu sync.Mutex
	n  map[string]int // approval id → votes being recorded or resumed
}

// enter registers a vote on approvalID; leave must follow.
func (v *liveVotes) enter(approvalID string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.n == nil {
		v.n = map[string]int{}
	}
	v.n[approvalID]++
}

// leave ends a registration made by enter.
func (v *liveVotes) leave(approvalID string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.n[approvalID]--; v.n[approvalID] <= 0 {
		delete(v.n, approvalID)
	}
}

// holds reports whether a vote on approvalID is being recorded or resumed.
func (v *liveVotes) holds(approvalID string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n[approvalID] > 0
}
