package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// readFailStore is a PostgreSQL store whose next read of one call record
// fails (a dropped connection, a statement timeout).
type readFailStore struct {
	*pgstore.Store
	id   string
	fail atomic.Bool
}

type readFailTx struct {
	kernel.ReadTx
	s *readFailStore
}

func (t readFailTx) Call(id string) (*kernel.CallRecord, error) {
	if id == t.s.id && t.s.fail.CompareAndSwap(true, false) {
		return nil, fmt.Errorf("%w: injected: connection reset", kernel.ErrUnavailable)
	}
	return t.ReadTx.Call(id)
}

func (s *readFailStore) View(fn func(kernel.ReadTx) error) error {
	return s.Store.View(func(tx kernel.ReadTx) error { return fn(readFailTx{tx, s}) })
}

// A call taken over from a replica that is gone, whose recovery fails once
// (the database blinks), is tried again by the replica that took it over.
// It used to stay "dispatching" for as long as that replica lived: the
// sweep takes over only other replicas' calls, and the failed recovery
// left it this replica's, so its agent waited and the tool never saw it.
func TestOrphanWhoseRecoveryFailedIsRetried(t *testing.T) {
	p := orphanPolicy(t)
	dsn := pgtest.Database(t)
	const id = "req-orphan"
	leaveOrphan(t, dsn, id)
	st := &readFailStore{Store: openPG(t, dsn), id: id}
	st.fail.Store(true)
	disp := &countingDispatcher{calls: map[string]int{}}
	k := startKernel(t, p, st, st.Store, disp, clock.NewFake(time.Now()))
	stored := func() *kernel.CallRecord {
		var rec *kernel.CallRecord
		st.Store.View(func(tx kernel.ReadTx) error { rec, _ = tx.Call(id); return nil })
		return rec
	}
	deadline := time.Now().Add(4 * kernel.SweepInterval)
	for stored().Status == kernel.StatusDispatching {
		if time.Now().After(deadline) {
			t.Fatalf("4 sweeps after its recovery failed once, the taken-over call is still dispatching (recovery failures: %d)",
				k.Recovery().Failed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.fail.Load() {
		t.Fatal("the injected read failure never happened")
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if rec := stored(); rec.Execution != kernel.ExecutionSucceeded || disp.calls[id] != 1 {
		t.Fatalf("execution %q, sent %d times; want succeeded, once", rec.Execution, disp.calls[id])
	}
}

// orphanPolicy is replicaPolicy with two approvers.
func orphanPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// leaveOrphan has a replica decide an at_least_once call (id) and go away
// cleanly: its call is an orphan at once, for any live replica to take.
func leaveOrphan(t *testing.T, dsn, id string) {
	t.Helper()
	gone := openPG(t, dsn)
	err := gone.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutCall(&kernel.CallRecord{RequestID: id, Status: kernel.StatusDispatching, Server: "demo", Tool: "echo",
			DecisionReceiptID: "rc-" + id, ReceiptID: "rc-" + id, Delivery: kernel.AtLeastOnce})
	})
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
}
