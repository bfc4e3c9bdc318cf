package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// leaveApprovedUndecided has a replica park a call, take the vote that
// approves it, and die before the allow decision commits: the call is left
// dispatching with no decision (the vote durable, the approver told it was
// approved, the tool never called), an orphan for any live replica. It
// returns the call's request id.
func leaveApprovedUndecided(t *testing.T, dsn string, p *policy.Policy) string {
	t.Helper()
	st := &decisionFailStore{Store: openPG(t, dsn)}
	clk := clock.NewFake(time.Now())
	// No Recover: this replica runs no sweep, so nothing of it retries the
	// decision before it is gone.
	k, err := kernel.New(kernel.Config{Key: storetest.Key(), Policy: p, Store: st, Dispatcher: &countingDispatcher{calls: map[string]int{}}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"esc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "delete_file", `{"path":"/tmp/x"}`, "", clk.Now())
	out, err := k.Submit(context.Background(), call)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	st.fail.Store(true)
	a := keys.FromSeed([]byte("approver-a-approver-a-approver-a"))
	tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, a, approval.DecisionApproved, nil)
	_, _ = k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test") // the vote commits, the decision does not
	if st.fail.Load() {
		t.Fatal("the approval did not reach the allow decision")
	}
	k.Close()
	st.Close() // gone: its calls are orphans at once
	return call.RequestID
}

// A replica died between the vote that approved a call and the commit of
// its allow decision; this replica's takeover claim of that call committed
// but lost its answer. The look through its own calls after a lost claim
// (ownStranded) skipped approved calls without a decision, since a live
// resume might be about to decide them, so the call stayed dispatching
// (the agent waiting, the tool never called) until this replica restarted.
func TestApprovedUndecidedCallOfALostClaimIsFinished(t *testing.T) {
	p := orphanPolicy(t)
	dsn := pgtest.Database(t)
	st := &lostClaimStore{Store: openPG(t, dsn)}
	disp := &countingDispatcher{calls: map[string]int{}}
	st.lose.Store(true)
	startKernel(t, p, st, st.Store, disp, clock.NewFake(time.Now()))
	id := leaveApprovedUndecided(t, dsn, p)
	stored := func() *kernel.CallRecord {
		var rec *kernel.CallRecord
		st.Store.View(func(tx kernel.ReadTx) error { rec, _ = tx.Call(id); return nil })
		return rec
	}
	if rec := stored(); rec.Status != kernel.StatusDispatching || rec.DecisionReceiptID != "" {
		t.Fatalf("the dead replica left %s (decision %q); want dispatching, undecided", rec.Status, rec.DecisionReceiptID)
	}
	deadline := time.Now().Add(6 * kernel.SweepInterval)
	for stored().Status == kernel.StatusDispatching {
		if time.Now().After(deadline) {
			t.Fatalf("6 sweeps after a takeover claim lost its answer, the claimed approved call is still dispatching (claim lost: %v)", !st.lose.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.lose.Load() {
		t.Fatal("the injected lost claim never happened")
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if rec := stored(); rec.Status != kernel.StatusAllowed || rec.Execution != kernel.ExecutionSucceeded || disp.calls[id] != 1 {
		t.Fatalf("status %s, execution %q, sent %d times; want allowed, succeeded, once", rec.Status, rec.Execution, disp.calls[id])
	}
}
