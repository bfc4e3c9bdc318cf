package chio

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// conflictOnceStore fails ONE Update, once armed, the way pgstore's
// commitGroup does after MaxRetries on a retryable error (a lock timeout
// 55P03, a serialization failure 40001, a deadlock 40P01): wrapped in
// kernel.ErrConflict. Every other read and write succeeds.
type conflictOnceStore struct {
	kernel.Store
	armed atomic.Bool
}

func (s *conflictOnceStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.armed.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: %v", kernel.ErrConflict, "ERROR: canceling statement due to lock timeout (SQLSTATE 55P03)")
	}
	return s.Store.Update(ctx, fn)
}

// 822092b wraps a failed settle commit in kernel.ErrOutcomeUnknown so that
// the API answers 500 outcome_unknown ("it may have run: retry the same
// id"). But the wrap keeps the store's error matchable, and httpapi's
// classify tests ErrRequestUsed/ErrConflict (409 conflict) and ErrNotFound
// (404) BEFORE ErrOutcomeUnknown (internal/httpapi/errors.go:68-73). A
// settle commit that pgstore reports as ErrConflict (lock timeout /
// serialization failure after its retries) reaches the agent as 409
// "conflict" — which the SDK documents as "a request id reused for a
// different call" and does not retry — for a refund that WAS paid. An
// agent that picks a new request id pays twice.
func TestSettleConflictAfterTheToolRanIsNeverAConflict(t *testing.T) {
	st := &conflictOnceStore{}
	tool := &slowTool{}
	tool.after = func() { st.armed.Store(true) } // the next commit (the settle) meets a lock timeout
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: lostOutcomePolicy, Dispatcher: tool, Serve: true,
		Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	c, err := NewClient(w.URL, WithKey(w.Agent), WithCapability(w.CapRaw))
	if err != nil {
		t.Fatal(err)
	}
	// The SDK, told outcome_unknown, retries the same id and then awaits the
	// call, which stays dispatching until the kept answer is recorded (on
	// PostgreSQL, by the replica sweep): stand in for that sweep.
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = w.Kernel.RecoverInFlight(context.Background())
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, Call{Server: "pay", Tool: "issue_refund", Arguments: map[string]any{"amount": 450}})
	if tool.runs() != 1 {
		t.Fatalf("the refund ran %d times, want 1 (err %v)", tool.runs(), err)
	}
	if errors.Is(err, ErrConflict) || (err != nil && !errors.Is(err, ErrOutcomeUnknown)) {
		t.Fatalf("the refund was paid, yet CallTool says %v (ErrConflict=%v: \"request id reused for a different call\"); want ErrOutcomeUnknown or the outcome",
			err, errors.Is(err, ErrConflict))
	}
	if err == nil {
		if a, ok := res.(*Allowed); !ok || a.Execution != "succeeded" {
			t.Fatalf("after the kept answer was recorded: %#v", res)
		}
	}
}

// decisionLostStore: once armed, the next Update (the allow decision's
// commit) reaches the disk but its caller is answered an error — a bbolt
// fsync error after the meta page was written (boltstore/heal.go: "a
// commit reported failed may still have reached the disk ... its decisions
// stand and recovery finishes their calls"), or a PostgreSQL COMMIT whose
// acknowledgement was lost in a failover. The store then stays down (reads
// and writes fail) until healed.
type decisionLostStore struct {
	kernel.Store
	armed, down atomic.Bool
}

func (s *decisionLostStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.down.Load() {
		return fmt.Errorf("%w: store cannot commit (healing)", kernel.ErrUnavailable)
	}
	if s.armed.CompareAndSwap(true, false) {
		err := s.Store.Update(ctx, fn) // durable
		s.down.Store(true)
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: fsync: input/output error", kernel.ErrUnavailable)
	}
	return s.Store.Update(ctx, fn)
}

func (s *decisionLostStore) View(fn func(kernel.ReadTx) error) error {
	if s.down.Load() {
		return fmt.Errorf("%w: store cannot commit (healing)", kernel.ErrUnavailable)
	}
	return s.Store.View(fn)
}

// 822092b made a failed SETTLE commit read as outcome_unknown, because a
// 503 'unavailable' tells the agent "nothing was allowed" and it re-submits
// under a new id. The same holds one commit earlier: when the allow
// DECISION's commit is reported failed but reached the disk (documented in
// boltstore/heal.go and ARCHITECTURE.md), Submit returns the store's
// ErrUnavailable (kernel.go execute -> commitAllow), the API answers 503
// 'unavailable', and CallTool reports ErrUnavailable ("nothing was
// allowed") — then the store heals, RecoverAfterHeal finds the durable
// decision and the at_least_once refund is paid. An agent following the
// documented contract pays again under a new id.
func TestDecisionCommitReportedFailedIsNeverUnavailable(t *testing.T) {
	st := &decisionLostStore{}
	tool := &slowTool{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: lostOutcomePolicy, Dispatcher: tool, Serve: true,
		Server: "pay", Grants: []string{"deploys"},
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	c, err := NewClient(w.URL, WithKey(w.Agent), WithCapability(w.CapRaw))
	if err != nil {
		t.Fatal(err)
	}
	st.armed.Store(true)
	_, callErr := c.CallTool(context.Background(), Call{Server: "pay", Tool: "echo", RequestID: "run-9:pay", Arguments: map[string]any{"amount": 450}})
	if tool.runs() != 0 {
		t.Fatalf("setup: the tool ran during the call (err %v)", callErr)
	}
	// The store heals (boltstore's OnHeal -> daemon -> RecoverAfterHeal).
	st.down.Store(false)
	if err := w.Kernel.RecoverAfterHeal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.WaitRecovery(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, _ := w.Kernel.Call("run-9:pay")
	if tool.runs() > 0 && (errors.Is(callErr, ErrUnavailable) || !errors.Is(callErr, ErrOutcomeUnknown)) {
		t.Fatalf("CallTool answered %v (ErrUnavailable=%v: \"nothing was allowed\"), yet the call's decision was durable and, "+
			"once the store healed, the tool ran %d time(s) (record %s/%s)",
			callErr, errors.Is(callErr, ErrUnavailable), tool.runs(), rec.Status, rec.Execution)
	}
}
