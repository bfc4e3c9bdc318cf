package kernel

import (
	"context"
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
// hold a deadline off.
//
// On a store shared by replicas (SharedArrivals), a vote presented to
// another replica is one this kernel cannot see in memory: its deadline
// once auto-approved (advisory) a call whose denial another replica had
// verified in time and was about to commit. So each vote is also recorded
// in the store before its clock is read, and its reading after; a
// deadline's action first asks the store, after its own clock reading,
// whether a live replica is presenting a vote that arrived before the
// deadline (or whose reading is not recorded yet), and fires again a
// second later while one is. A vote recorded after that question read
// its clock after the deadline's reading: late, as above.

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

// SharedArrivals is implemented by a store that several kernels share: the
// votes being presented to each, as the others' deadlines see them.
type SharedArrivals interface {
	// ArriveVote durably records that a vote on approvalID is being
	// presented to this kernel, its clock not read yet, and returns the
	// record's id.
	ArriveVote(ctx context.Context, approvalID string) (int64, error)
	// ArrivedAt records the clock reading (unix seconds) the vote is
	// judged at.
	ArrivedAt(ctx context.Context, arrival, at int64) error
	// EndArrival removes the record: the vote was recorded or refused.
	EndArrival(ctx context.Context, arrival int64)
	// VotesArriving reports whether a live kernel is presenting a vote on
	// approvalID that arrived before deadline (unix seconds), or whose
	// reading is not recorded yet. A record left behind (its kernel gone,
	// or its removal failed) counts for a bounded time only.
	VotesArriving(ctx context.Context, approvalID string, deadline int64) (bool, error)
}

// arrive registers a vote on approvalID (add), first in a shared store:
// the clock is read after the store holds the record. A store that cannot
// record it refuses the vote (nothing else changes); end must follow a
// nil error.
func (k *Kernel) arrive(ctx context.Context, approvalID string) (now time.Time, end func(), err error) {
	sa, ok := k.store.(SharedArrivals)
	if !ok {
		now, end = k.arrivals.add(approvalID, k.clock)
		return now, end, nil
	}
	id, err := sa.ArriveVote(ctx, approvalID)
	if err != nil {
		return time.Time{}, nil, err
	}
	now, endLocal := k.arrivals.add(approvalID, k.clock)
	end = func() {
		endLocal()
		sa.EndArrival(context.WithoutCancel(ctx), id)
	}
	if err := sa.ArrivedAt(ctx, id, now.Unix()); err != nil {
		end()
		return time.Time{}, nil, err
	}
	return now, end, nil
}

// votesArrivingElsewhere reports whether a replica sharing the store is
// presenting a vote on approvalID that arrived before deadline.
func (k *Kernel) votesArrivingElsewhere(ctx context.Context, approvalID string, deadline int64) (bool, error) {
	sa, ok := k.store.(SharedArrivals)
	if !ok {
		return false, nil
	}
	return sa.VotesArriving(ctx, approvalID, deadline)
}
