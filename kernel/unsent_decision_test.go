package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// An approved at_most_once refund whose allow decision's commit is
// reported failed but reached the disk (bbolt: the meta page was written,
// its fsync failed; PostgreSQL: COMMIT's answer was lost). This kernel
// sent nothing: it sends only after the decision's commit succeeds. When
// the store heals, recovery finds the call decided and in flight, and used
// to settle it as if chiod had died mid-delivery: execution "unknown"
// with an incomplete receipt saying "chiod stopped while the call was in
// flight", about a refund that certainly never reached the tool and that
// a human approved. The call was never sent, so sending it now is its
// one and only delivery.
func TestHealDeliversAnAtMostOnceDecisionItNeverSent(t *testing.T) {
	r := newCrashRig(t, "deny", 0, true)
	ctx := context.Background()
	c := r.w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	out, err := r.w.Kernel.Submit(ctx, c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	id := out.ApprovalRequestID
	eventually(t, "the Finance Lead to be told", func() bool {
		req, err := r.w.Kernel.Approval(id)
		return err == nil && req.Notified > req.Tier
	})
	// The vote's commit goes through; the allow decision's, next, is
	// durable but reported failed. Later commits go through (healed).
	r.cs.crashAt, r.cs.heals = r.cs.n.Load()+2, true
	tok := r.w.Token(t, id, financeLead, approval.DecisionApproved, nil)
	if _, err := r.w.Kernel.Respond(ctx, id, tok, "", ""); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("vote: %v, want the decision's commit reported failed", err)
	}
	if n := len(r.tool.deliveries(c.RequestID)); n != 0 {
		t.Fatalf("sent %d times after its decision's commit was reported failed", n)
	}
	rec, err := r.w.Kernel.Call(c.RequestID)
	if err != nil || rec.Status != kernel.StatusDispatching || rec.DecisionReceiptID == "" {
		t.Fatalf("the decision did not reach the disk: %+v %v", rec, err)
	}
	// The store heals (chiod's OnHeal).
	if err := r.w.Kernel.RecoverAfterHeal(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.w.Kernel.WaitRecovery(wctx); err != nil {
		t.Fatal(err)
	}
	r.w.Kernel.WaitSettles()
	rec, err = r.w.Kernel.Call(c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.tool.deliveries(c.RequestID)); n != 1 || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("an approved at_most_once refund this chiod never sent was delivered %d times and recorded %s/%q (%s)",
			n, rec.Status, rec.Execution, rec.ToolError)
	}
}
