package kernel_test

// Paths that once answered
// "unavailable" (503: "nothing was allowed", docs/agent-developer.md) for a
// call whose decision may be durable and which then runs.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// lostCommitStore: once armed, the next Update reaches the disk but is
// answered an fsync error (boltstore/heal.go: "a commit reported failed may
// still have reached the disk"; a PostgreSQL COMMIT whose ack was lost);
// then the store is down (reads and writes fail) until healed. Same model as
// sdk/decision_commit_outcome_test.go's decisionLostStore. hold, if set,
// is waited on before the armed commit is answered.
type lostCommitStore struct {
	kernel.Store
	armed, down atomic.Bool
	hold        chan struct{}
	entered     chan struct{}
	skip        atomic.Int32 // armed Updates to let through first
}

func (s *lostCommitStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.down.Load() {
		return fmt.Errorf("%w: store cannot commit (healing)", kernel.ErrUnavailable)
	}
	if s.armed.Load() && s.skip.Add(-1) >= 0 {
		return s.Store.Update(ctx, fn)
	}
	if s.armed.CompareAndSwap(true, false) {
		if s.entered != nil {
			close(s.entered)
		}
		if s.hold != nil {
			<-s.hold
		}
		err := s.Store.Update(ctx, fn) // durable
		s.down.Store(true)
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: fsync: input/output error", kernel.ErrUnavailable)
	}
	return s.Store.Update(ctx, fn)
}

func (s *lostCommitStore) View(fn func(kernel.ReadTx) error) error {
	if s.down.Load() {
		return fmt.Errorf("%w: store cannot commit (healing)", kernel.ErrUnavailable)
	}
	return s.Store.View(fn)
}

func lostCommitWorld(t *testing.T, extra string, st *lostCommitStore) (*testkit.World, *fakeDispatcher, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	disp := &fakeDispatcher{}
	p := honestLogPolicyFor(t, 1, 1, extra, financeLead)
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Clock: clk, Dispatcher: disp,
		KernelKey: testkit.Key(keys.FromSeed(make([]byte, 32))), Agent: testkit.Key(agentK), Grants: []string{"deploys"},
		CapabilityTTL: 24 * time.Hour,
		WrapStore:     func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	return w, disp, clk
}

// "unavailable" is what httpapi.classify answers for an error that is
// ErrUnavailable but not ErrOutcomeUnknown (503; the SDKs: nothing allowed).
func readsAsUnavailable(err error) bool {
	return err != nil && errors.Is(err, kernel.ErrUnavailable) && !errors.Is(err, kernel.ErrOutcomeUnknown)
}

// The park commit (approvals.go suspend) is not wrapped like commitAllow:
// a park reported failed but durable is answered 503 'unavailable' ("nothing
// was allowed"), then after the heal RecoverAfterHeal announces the request
// to approvers, an approval runs the call. The agent, told nothing was
// allowed, has already re-submitted under a new id: two payments.
func TestParkCommitReportedFailedIsNeverUnavailable(t *testing.T) {
	st := &lostCommitStore{}
	w, disp, clk := lostCommitWorld(t, "", st)
	k := w.Kernel
	call := testkit.NewCall(t, agentK, w.CapRaw, "demo", "echo", `{"amount":450}`, "", clk.Now())
	st.skip.Store(1) // the standing-approval claim (tryBatch) finds none; the park is next
	st.armed.Store(true)
	_, submitErr := k.Submit(context.Background(), call)
	if submitErr == nil {
		t.Fatal("setup: the park commit did not fail")
	}
	// The store heals (boltstore OnHeal -> RecoverAfterHeal).
	st.down.Store(false)
	if err := k.RecoverAfterHeal(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err := k.Call(call.RequestID)
	if err != nil || rec.ApprovalID == "" {
		t.Fatalf("setup: park not durable: %+v %v", rec, err)
	}
	if _, err := k.Respond(context.Background(), rec.ApprovalID,
		testkit.SignToken(t, k, clk.Now(), rec.ApprovalID, financeLead, "approved", nil), "", ""); err != nil {
		t.Fatal(err)
	}
	k.WaitSettles()
	if disp.count(call.RequestID) > 0 && readsAsUnavailable(submitErr) {
		t.Fatalf("Submit answered %v (503 'unavailable': nothing was allowed), yet the parked call was durable and ran %d time(s) once approved",
			submitErr, disp.count(call.RequestID))
	}
}

const lostCommitPlainPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
`

// A duplicate of a request id (a client retry while the first attempt is
// still in the kernel) waits for the first; when the first's allow
// decision commit is reported failed but durable, the first gets
// ErrOutcomeUnknown (9809c16) but the duplicate goes through replay()
// (retry.go:13), finds no record, and is answered ErrUnavailable:
// 503 'unavailable'. After the heal, recovery runs the call.
func TestDuplicateOfALostDecisionIsNeverUnavailable(t *testing.T) {
	st := &lostCommitStore{hold: make(chan struct{}), entered: make(chan struct{})}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: lostCommitPlainPolicy, Clock: clk, Dispatcher: disp,
		Agent: testkit.Key(agentK), Grants: []string{"deploys"}, CapabilityTTL: 24 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	k := w.Kernel
	call := testkit.NewCall(t, agentK, w.CapRaw, "demo", "echo", `{"amount":450}`, "", clk.Now())
	dup := *call
	st.armed.Store(true)
	firstErr := make(chan error, 1)
	go func() { _, err := k.Submit(context.Background(), call); firstErr <- err }()
	<-st.entered // the first holds the decision commit
	dupErr := make(chan error, 1)
	go func() { _, err := k.Submit(context.Background(), &dup); dupErr <- err }()
	time.Sleep(200 * time.Millisecond) // the duplicate waits for the first
	close(st.hold)
	e1, e2 := <-firstErr, <-dupErr
	if !errors.Is(e1, kernel.ErrOutcomeUnknown) {
		t.Fatalf("setup: first Submit: %v", e1)
	}
	st.down.Store(false)
	if err := k.RecoverAfterHeal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := k.WaitRecovery(context.Background()); err != nil {
		t.Fatal(err)
	}
	k.WaitSettles()
	if disp.count(call.RequestID) > 0 && readsAsUnavailable(e2) {
		t.Fatalf("the duplicate was answered %v (503 'unavailable': nothing was allowed) while the first was told %q; "+
			"the decision was durable and the call ran %d time(s) after the heal", e2, e1, disp.count(call.RequestID))
	}
}

// The same request id retried (as the docs tell the agent after
// outcome_unknown) while the store cannot be read: Submit's first read
// (kernel.go Submit, store.View error) answers ErrUnavailable, i.e. 503
// 'unavailable' "nothing was allowed", for a request id whose allow
// decision is durable and which recovery then runs. A fresh SDK client /
// process (chio call --request-id, a restarted agent) has no memory of
// the earlier lost answer and reports "nothing was allowed".
func TestRetryOfALostDecisionWhileStoreDownIsNeverUnavailable(t *testing.T) {
	st := &lostCommitStore{}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: lostCommitPlainPolicy, Clock: clk, Dispatcher: disp,
		Agent: testkit.Key(agentK), Grants: []string{"deploys"}, CapabilityTTL: 24 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	k := w.Kernel
	call := testkit.NewCall(t, agentK, w.CapRaw, "demo", "echo", `{"amount":450}`, "", clk.Now())
	retry := *call
	st.armed.Store(true)
	if _, err := k.Submit(context.Background(), call); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("setup: first Submit: %v", err)
	}
	_, retryErr := k.Submit(context.Background(), &retry) // same id, store still down
	st.down.Store(false)
	if err := k.RecoverAfterHeal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := k.WaitRecovery(context.Background()); err != nil {
		t.Fatal(err)
	}
	k.WaitSettles()
	if disp.count(call.RequestID) > 0 && readsAsUnavailable(retryErr) {
		t.Fatalf("the same-id retry was answered %v (503 'unavailable': nothing was allowed); the call ran %d time(s) after the heal",
			retryErr, disp.count(call.RequestID))
	}
}
