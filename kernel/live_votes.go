package kernel

import "sync"

// liveVotes counts, per approval id, the votes this kernel is recording
// right now, each from before its commit until the resume that follows an
// approving one has returned (recordVote); a reload's reconcile registers
// likewise until it has handed the call it approves to recovery's workers
// (approvers.go). A call whose approving vote has committed but whose
// allow decision has not (dispatching, no decision receipt) is then either
// held here, because the live resume that will decide it is still
// running, or has no live resume on this kernel at all (it returned having
// failed, or the vote was another replica's). Recovery must take only the
// second kind: a call read undecided was approved by a vote that committed
// before the read, so the resume of that vote registered here before the
// read and has not left while it is still registered. Recovery therefore
// waits for such a call's registration to end (released) before it
// resumes it, and the look for stranded calls after a lost claim
// (ownStranded) skips it.
type liveVotes struct {
	mu sync.Mutex
	m  map[string]*liveVote // approval id → its votes being recorded or resumed
}

type liveVote struct {
	n    int
	done chan struct{} // closed when n drops to 0
}

// enter registers a vote on approvalID; leave must follow.
func (v *liveVotes) enter(approvalID string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]*liveVote{}
	}
	lv := v.m[approvalID]
	if lv == nil {
		lv = &liveVote{done: make(chan struct{})}
		v.m[approvalID] = lv
	}
	lv.n++
}

// leave ends a registration made by enter.
func (v *liveVotes) leave(approvalID string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	lv := v.m[approvalID]
	if lv == nil {
		return
	}
	if lv.n--; lv.n <= 0 {
		close(lv.done)
		delete(v.m, approvalID)
	}
}

// holds reports whether a vote on approvalID is being recorded or resumed.
func (v *liveVotes) holds(approvalID string) bool {
	return v.released(approvalID) != nil
}

// released returns a channel closed once no vote on approvalID is being
// recorded or resumed, or nil when none is now.
func (v *liveVotes) released(approvalID string) <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if lv := v.m[approvalID]; lv != nil {
		return lv.done
	}
	return nil
}
