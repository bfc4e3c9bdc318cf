package pgstore_test

import (
	"context"

	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
)

// lostClaimStore is a PostgreSQL store whose next takeover claim that
// takes calls commits but loses its answer (a connection cut after the
// UPDATE committed): the calls are this replica's, and it was not told.
type lostClaimStore struct {
	*pgstore.Store
	lose atomic.Bool
}

func (s *lostClaimStore) ClaimOrphans(ctx context.Context, limit int) ([]*kernel.CallRecord, error) {
	recs, err := s.Store.ClaimOrphans(ctx, limit)
	if err == nil && len(recs) > 0 && s.lose.CompareAndSwap(true, false) {
		return nil, fmt.Errorf("%w: injected: connection reset after the claim committed", kernel.ErrUnavailable)
	}
	return recs, err
}

// A takeover claim whose answer was lost made calls this replica's that it
// never saw. No other replica takes a live replica's calls, so they stayed
// "dispatching" (the agent waiting, the tool never called) until this
// replica restarted. The replica now looks through its own calls after
// such a failure and finishes the ones no live path holds.
func TestCallsOfALostTakeoverClaimAreFinished(t *testing.T) {
	p := orphanPolicy(t)
	dsn := pgtest.Database(t)
	st := &lostClaimStore{Store: openPG(t, dsn)}
	disp := &countingDispatcher{calls: map[string]int{}}
	startKernel(t, p, st, st.Store, disp, clock.NewFake(time.Now()))
	st.lose.Store(true)
	const id = "req-lost-claim"
	leaveOrphan(t, dsn, id)
	stored := func() *kernel.CallRecord {
		var rec *kernel.CallRecord
		st.Store.View(func(tx kernel.ReadTx) error { rec, _ = tx.Call(id); return nil })
		return rec
	}
	deadline := time.Now().Add(6 * kernel.SweepInterval)
	for stored().Status == kernel.StatusDispatching {
		if time.Now().After(deadline) {
			t.Fatalf("6 sweeps after a takeover claim lost its answer, the claimed call is still dispatching (claim lost: %v)", !st.lose.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.lose.Load() {
		t.Fatal("the injected lost claim never happened")
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if rec := stored(); rec.Execution != kernel.ExecutionSucceeded || disp.calls[id] != 1 {
		t.Fatalf("execution %q, sent %d times; want succeeded, once", rec.Execution, disp.calls[id])
	}
}
