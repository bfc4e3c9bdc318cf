package kernel_test

import (
	"testing"

	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// ListPending's Approver filter (GET /approvals/pending?approver=, what
// `chio approval watch` reads as "requests you may decide") listed the
// agent's own call to its key, an approver of the grant: the kernel never
// counts that vote (approval.Request.MayDecide). It lists only requests
// the key may decide.
func TestPendingForApproverLeavesOutTheirOwnCall(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{Policy: selfTier(t, agentK.Public().String(), cfo.Public().String()),
		Dispatcher: &argsDispatcher{}, Agent: testkit.Key(agentK), Server: "pay", Grants: []string{"refunds"}})
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", out)
	}
	req, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil || !req.Trusts(agentK.Public().String()) {
		t.Fatalf("the agent's key is not among the request's approvers: %+v %v", req, err)
	}
	mine, err := w.Kernel.ListPending(kernel.PendingFilter{Approver: agentK.Public().String()})
	if err != nil || len(mine) != 0 {
		t.Fatalf("pending for the agent's own key: %d requests (%v); want none: it may not decide its own call", len(mine), err)
	}
	theirs, err := w.Kernel.ListPending(kernel.PendingFilter{Approver: cfo.Public().String()})
	if err != nil || len(theirs) != 1 {
		t.Fatalf("pending for the CFO: %d requests (%v); want the call", len(theirs), err)
	}
}
