package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// revokedReadFailStore is a PostgreSQL store whose next read of capability
// failCap's revocation fails (a dropped connection, a statement timeout).
type revokedReadFailStore struct {
	*pgstore.Store
	failCap atomic.Pointer[string]
}

type revokedReadFailTx struct {
	kernel.ReadTx
	s *revokedReadFailStore
}

func (t revokedReadFailTx) Revoked(capID string) (bool, error) {
	if p := t.s.failCap.Load(); p != nil && *p == capID && t.s.failCap.CompareAndSwap(p, nil) {
		return false, fmt.Errorf("%w: injected: connection reset", kernel.ErrUnavailable)
	}
	return t.ReadTx.Revoked(capID)
}

func (s *revokedReadFailStore) View(fn func(kernel.ReadTx) error) error {
	return s.Store.View(func(tx kernel.ReadTx) error { return fn(revokedReadFailTx{tx, s}) })
}

// The vote approving a call committed, then the resume's first read (is
// the capability revoked?) failed: the approver was told the vote is
// recorded and chio finishes the call. On a live replica nothing did: the
// call stayed dispatching without a decision, no other replica takes a
// live replica's calls, and its own sweep retried only decisions whose
// commit failed, so the tool was never called until the replica restarted.
func TestApprovedCallWhoseResumeFailedIsFinishedBySweep(t *testing.T) {
	p := orphanPolicy(t)
	st := &revokedReadFailStore{Store: openPG(t, pgtest.Database(t))}
	disp := &countingDispatcher{calls: map[string]int{}}
	clk := clock.NewFake(time.Now())
	k := startKernel(t, p, st, st.Store, disp, clk)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, capab, err := k.IssueCapability(agent.Public(), []string{"esc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "delete_file", `{"path":"/tmp/x"}`, "", clk.Now())
	out, err := k.Submit(context.Background(), call)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	st.failCap.Store(&capab.ID)
	a := keys.FromSeed([]byte("approver-a-approver-a-approver-a"))
	tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, a, approval.DecisionApproved, nil)
	if _, err := k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, kernel.ErrVoteRecorded) {
		t.Fatalf("Respond: %v; want the vote recorded, the resume failed", err)
	}
	deadline := time.Now().Add(4 * kernel.SweepInterval)
	for {
		rec, err := k.Call(call.RequestID)
		if err == nil && rec.Status != kernel.StatusDispatching {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("4 sweeps after its resume failed, the approved call is still %s (decision %q)", rec.Status, rec.DecisionReceiptID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec, _ := k.Call(call.RequestID)
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[call.RequestID]; n != 1 || rec.Status != kernel.StatusAllowed || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("status %s, execution %q, sent %d times; want allowed, succeeded, once", rec.Status, rec.Execution, n)
	}
}
