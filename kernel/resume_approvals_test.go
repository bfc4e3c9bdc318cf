package kernel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A call approved under one policy whose allow decision never committed
// (chiod died between the vote's commit and the decision's) is resumed at
// the next start under the policy in force then. Its approvals must still
// be valid under that policy: the operator who removed the approver (a
// compromised key) or raised the quorum while chiod was down expects the
// call denied, not run on the approval the new file no longer counts
// (docs/platform.md "Reload": votes a removed key cast "stop counting
// toward the quorum"; a raised quorum "applies to calls already parked").
// resume re-checked the capability, the grant and the guards, never the
// votes, so recovery ran the call.
func TestRecoveredApprovalIsRecountedUnderThePolicyInForce(t *testing.T) {
	replacement := keys.FromSeed([]byte("replacement-approver-key-32bytes"))
	cases := map[string]string{
		"approver removed": fmt.Sprintf(voteOrderPolicy, replacement.Public(), cfo.Public(), 1, 1, "deny"),
		"quorum raised":    fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 2, 1, "deny"),
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			after, err := policy.Parse([]byte(text), "after.toml")
			if err != nil {
				t.Fatal(err)
			}
			fake := clock.NewFake(time.Unix(1_900_000_000, 0))
			// The fifth update would commit the allow decision (the park,
			// its announcement and the approving vote come before): chiod
			// dies there. Checked below: the call is left approved and
			// undecided.
			cs := &crashStore{crashAt: 5}
			tool := &argsDispatcher{}
			w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "deny"), Dispatcher: tool, Clock: fake,
				Server: "pay", Grants: []string{"refunds"},
				WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
			ctx := context.Background()
			out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
			if out.Status != kernel.StatusPendingApproval {
				t.Fatalf("park: %+v", out)
			}
			tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
			_, _ = w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
			if n := len(tool.got(out.RequestID)); n != 0 {
				t.Fatalf("the first run delivered the call %d time(s): chiod did not die before the decision", n)
			}
			w.Kernel.Close()
			var left *kernel.CallRecord
			if err := w.Store.View(func(tx kernel.ReadTx) error { var err error; left, err = tx.Call(out.RequestID); return err }); err != nil {
				t.Fatal(err)
			}
			if left.Status != kernel.StatusDispatching || left.DecisionReceiptID != "" {
				t.Fatalf("the crash did not leave the call approved and undecided: %s, decision %q", left.Status, left.DecisionReceiptID)
			}

			// Restart on the same bbolt file with the new policy.
			k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: after, Store: w.Store, Dispatcher: tool, Clock: fake})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(k.Close)
			if err := k.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := k.WaitRecovery(wctx); err != nil {
				t.Fatal(err)
			}
			rec, err := k.Call(out.RequestID)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(tool.got(out.RequestID)); n != 0 || rec.Status != kernel.StatusDenied {
				t.Fatalf("after a restart with %s, the call approved under the old policy is %s (guard %q: %s) and the tool ran %d time(s)",
					name, rec.Status, rec.Guard, rec.Reason, n)
			}
			req, err := k.Approval(out.ApprovalRequestID)
			if err != nil {
				t.Fatal(err)
			}
			if req.Resolution == nil || req.Resolution.CallStatus != kernel.StatusDenied || req.Resolution.Guard != rec.Guard {
				t.Fatalf("the request's resolution does not say why the call was denied: %+v", req.Resolution)
			}
		})
	}
}

// The same for the kernel's own advisory approval: the deadline passed,
// the policy answered it with auto_approve_advisory, and chiod died before
// the allow decision committed. Restarted with timeout_action = "deny"
// (the operator ending unreviewed auto-approvals), the policy in force no
// longer approves the call: it must be denied, not run on an advisory
// vote the new file would never cast.
func TestRecoveredAdvisoryApprovalIsJudgedByThePolicyInForce(t *testing.T) {
	after := quorumPolicy(t, 1, 1, "deny")
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	// The sixth update would commit the allow decision (the park, its
	// announcement, the advisory's check and its vote come before).
	cs := &crashStore{crashAt: 6}
	tool := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "auto_approve_advisory"), Dispatcher: tool, Clock: fake,
		Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	fake.Advance(601 * time.Second) // the deadline fires: the kernel's advisory vote
	stored := func() *kernel.CallRecord {
		var rec *kernel.CallRecord
		if err := w.Store.View(func(tx kernel.ReadTx) error { var err error; rec, err = tx.Call(out.RequestID); return err }); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	for i := 0; stored().Status == kernel.StatusPendingApproval; i++ {
		if i == 2000 {
			t.Fatal("the deadline never approved the call")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Kernel.Close()
	if left := stored(); left.Status != kernel.StatusDispatching || left.DecisionReceiptID != "" || len(tool.got(out.RequestID)) != 0 {
		t.Fatalf("the crash did not leave the call approved and undecided: %s, decision %q", left.Status, left.DecisionReceiptID)
	}

	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: after, Store: w.Store, Dispatcher: tool, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := k.WaitRecovery(wctx); err != nil {
		t.Fatal(err)
	}
	rec, err := k.Call(out.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tool.got(out.RequestID)); n != 0 || rec.Status != kernel.StatusDenied {
		t.Fatalf("after a restart with timeout_action = \"deny\", the advisory-approved call is %s (guard %q: %s) and the tool ran %d time(s)",
			rec.Status, rec.Guard, rec.Reason, n)
	}
}

// The live path has the same window: the vote commits under the policy
// in force, and a reload that removes the voter's key lands before the
// resume decides the call. The call must be judged by the approvals the
// policy in force counts, as at a restart.
func TestResumeRecountsApprovalsAfterAReloadBehindTheVote(t *testing.T) {
	replacement := keys.FromSeed([]byte("replacement-approver-key-32bytes"))
	removed, err := policy.Parse([]byte(fmt.Sprintf(voteOrderPolicy, replacement.Public(), cfo.Public(), 1, 1, "deny")), "removed.toml")
	if err != nil {
		t.Fatal(err)
	}
	gs := &gatedStore{}
	tool := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "deny"), Dispatcher: tool,
		Clock: clock.NewFake(time.Unix(1_900_000_000, 0)), Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	// Respond reads the request (View 1), commits the vote, and the resume
	// then reads whether the capability was revoked (View 2): the reload
	// removing the Finance Lead's key lands there, after the vote.
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, removed); err != nil {
				t.Error(err)
			}
			return
		}
		gs.beforeView.Store(&hook)
	}
	gs.beforeView.Store(&hook)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if views.Load() != 2 {
		t.Fatalf("the reload never landed (%d views)", views.Load())
	}
	if err != nil || res.Call == nil || res.Call.Status != kernel.StatusDenied || res.Call.Guard != kernel.GuardApprovalPolicy ||
		len(tool.got(out.RequestID)) != 0 {
		t.Fatalf("after a reload removed the only approver who voted, the approved call answered %+v (call %+v, err %v); the tool ran %d time(s)",
			res, res.Call, err, len(tool.got(out.RequestID)))
	}
}
