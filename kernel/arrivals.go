package kernel

import (
	"sync"
	"time"

	"github.com/chiokernel/chio/internal/clock"
)

// A vote is judged at its arrival (approval.Verify at the clock reading
// RespondWith takes), but it is recorded by a later commit. A deadline
// firing in between must not act first: an approver's denial that arrived
// a second before the deadline would lose to the advisory auto-approval
// of a call "nobody decided" (the call ran, and the approver was told the
// request was resolved before their vote arrived), and an approval that
// arrived in time to a timeout deny. So each presented token is
// registered here before its arrival time is read, and a deadline's
// action first waits for the votes on its request that arrived before the
// deadline (Expire). One registered later read the clock after the
// deadline's own reading, so approval.Verify refuses it as late: the wait
// is for votes already on their way, and a stream of late tokens cannot
// hold a deadline off. Only this kernel's votes are seen; on a shared
// store, a vote on another replica racing the deadline is judged by its
// commit (advisoryApplies, due).

// arrivals holds the votes being presented now, per approval id.
type arrivals struct {
	mu sync.Mutex
	m  map[string]map[*arrival]struct{}
}

type arrival struct {
	at   int64         // unix seconds: the clock reading the vote is judged at
	done chan struct{} // closed when the vote has been recorded or refused
}

// add registers a vote on approvalID and reads the clock for it, under one
// lock with before's look: a vote is either seen by a deadline's action
// or arrives no earlier than its clock reading. end must follow.
func (a *arrivals) add(approvalID string, clk clock.Clock) (now time.Time, end func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now = clk.Now()
	v := &arrival{at: now.Unix(), done: make(chan struct{})}
	if a.m == nil {
		a.m = map[string]map[*arrival]struct{}{}
	}
	if a.m[approvalID] == nil {
		a.m[approvalID] = map[*arrival]struct{}{}
	}
	a.m[approvalID][v] = struct{}{}
	return now, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.m[approvalID], v)
		if len(a.m[approvalID]) == 0 {
			delete(a.m, approvalID)
		}
		close(v.done)
	}
}

// before returns a function that waits until every vote on approvalID
// that arrived before deadline (unix seconds) has been recorded or
// refused, or nil when there is none.
func (a *arrivals) before(approvalID string, deadline int64) func() {
	a.mu.Lock()
	defer a.mu.Unlock()
	var waits []chan struct{}
	for v := range a.m[approvalID] {
		if v.at < deadline {
			waits = append(waits, v.done)
		}
	}
	if len(waits) == 0 {
		return nil
	}
	return func() {
		for _, w := range waits {
			<-w
		}
	}
}
