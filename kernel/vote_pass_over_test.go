package kernel_test

import (
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A reload that leaves a parked call's tier to the agent alone and names
// the approver at the next tier passes the request over to that tier
// (skip_tiers.go); the reconcile, a restart's resume and the uncounted
// voters all judge votes at that tier. A vote arriving after the reload
// is in force but before its reconcile reached the request (many pending
// requests, one commit each; a reconcile the store failed, retried) was
// judged at the tier the policy leaves to nobody: refused as "nobody may
// decide" or as an untrusted signer (403, which says not to retry), while
// the policy in force lets that approver decide it.
func TestVoteBeforeAPassOverReconcileCountsAtTheNextTier(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs before Respond; during, after its checks and before
		// the vote's commit.
		before, during bool
	}{
		{"reload before the vote", true, false},
		{"reload while the vote is on its way", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := clock.NewFake(time.Unix(1_900_000_000, 0))
			tool := &argsDispatcher{}
			w := testkit.NewWorld(t, testkit.Options{Policy: selfTier(t, financeLead.Public().String(), cfo.Public().String()), Clock: fake,
				Dispatcher: tool, Agent: testkit.Key(agentK), Server: "pay", Grants: []string{"refunds"}})
			out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
			if out.Status != kernel.StatusPendingApproval {
				t.Fatalf("park: %+v", out)
			}
			tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
			// In force, not yet reconciled (SetPolicy is ApplyPolicy's first step).
			if tc.before {
				w.Kernel.SetPolicy(selfTierWithLead(t))
			}
			if tc.during {
				w.Kernel.BeforeVoteCommit(func() { w.Kernel.SetPolicy(selfTierWithLead(t)) })
			}
			res, err := w.Kernel.Respond(t.Context(), out.ApprovalRequestID, tok, "", "")
			if err != nil || res.Outcome != approval.StatusApproved {
				t.Fatalf("the Finance Lead, whom the policy in force lets decide this request (at the tier it passes it over to), approved: %+v, %v", res, err)
			}
			rec, err := w.Kernel.Call(out.RequestID)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(tool.got(out.RequestID)); n != 1 || rec.Status != kernel.StatusAllowed {
				t.Fatalf("approved call is %s (guard %q: %s), ran %d time(s)", rec.Status, rec.Guard, rec.Reason, n)
			}
		})
	}
}
