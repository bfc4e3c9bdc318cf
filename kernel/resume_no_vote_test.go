package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// An approved call left undecided by a crash whose request holds no vote
// (only a damaged or hand-edited store holds one) counts no approval: the
// recount of approved_now.go must deny it, not skip the recount for want
// of a vote and run the call.
func TestRecoveredApprovalWithoutVotesIsDenied(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	cs := &crashStore{crashAt: 5} // dies before the allow decision commits
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
	w.Kernel.Close()
	// The damage: the approved request's votes are gone.
	err := w.Store.Update(ctx, func(tx kernel.Tx) error {
		req, err := tx.Approval(out.ApprovalRequestID)
		if err != nil {
			return err
		}
		if req.Status != approval.StatusApproved {
			t.Fatalf("the crash did not leave the request approved: %s", req.Status)
		}
		req.Votes = nil
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: quorumPolicy(t, 1, 1, "deny"), Store: w.Store, Dispatcher: tool, Clock: fake})
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
		t.Fatalf("an approved request without a recorded vote: the call is %s (guard %q) and the tool ran %d time(s)", rec.Status, rec.Guard, n)
	}
}
