package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A standing approval covers a call only while the policy in force lets
// its signer approve that call (batch.go). The signers were taken from the
// policy the call was judged by, read before the claim's commit: a reload
// in between that removed the signer's key from the grant did not stop its
// batch from allowing the call, and the call ran with no human asked under
// the policy in force.
func TestBatchClaimHonoursAReloadBeforeItsCommit(t *testing.T) {
	firstN := func(t *testing.T, approvers ...string) *policy.Policy {
		text := strings.Replace(fmt.Sprintf(voteOrderPolicy, approvers[0], approvers[len(approvers)-1], 1, 1, "deny"),
			"require_approval_always = true", "require_approval_first_n = 5", 1)
		if len(approvers) == 1 {
			text = text[:strings.LastIndex(text, "[[grants.approval.approvers]]")]
		}
		p, err := policy.Parse([]byte(text), "first-n.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gs := &gatedStore{}
	disp := &argsDispatcher{}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{Policy: firstN(t, financeLead.Public().String(), cfo.Public().String()), Dispatcher: disp,
		Clock: fake, Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: financeLead.Public().String(),
		Audience: w.Kernel.PublicKey().String(), ServerPattern: "pay", ToolPattern: "issue_refund", NotBefore: fake.Now().Unix(), NotAfter: fake.Now().Add(time.Hour).Unix()}
	raw, err := bt.Sign(financeLead)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Kernel.CreateBatch(ctx, raw); err != nil {
		t.Fatal(err)
	}
	// Submit reads the call's record (View 1); decide reads the policy,
	// then the grant's first-N count (View 2); then the batch claim
	// commits. The reload removing the Finance Lead lands at View 2.
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, firstN(t, cfo.Public().String())); err != nil {
				t.Error(err)
			}
			return
		}
		gs.beforeView.Store(&hook)
	}
	gs.beforeView.Store(&hook)
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	out, err := w.Kernel.Submit(ctx, c)
	if views.Load() != 2 {
		t.Fatalf("the reload never landed (%d views)", views.Load())
	}
	if err != nil || out.Status != kernel.StatusPendingApproval || len(disp.got(c.RequestID)) != 0 {
		t.Fatalf("after a reload that removed its signer, the Finance Lead's standing approval answered %+v (err %v); the tool ran %d time(s)",
			out, err, len(disp.got(c.RequestID)))
	}
}
