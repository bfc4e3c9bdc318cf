package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// A reload that removes an approver keeps their vote on a pending request
// but stops counting it (the kernel counts only the approvers the policy in
// force trusts, which ApplyPolicy writes into the request). `chio approval
// list` and `show` counted every recorded vote: "1/2 approved" for a
// request that still needs two approvals, so the next approver read that
// one more would run the call.
func TestApprovalProgressCountsOnlyTrustedApprovers(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	departed, _ := keys.Generate(nil)
	err := w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		req, err := tx.Approval(out.ApprovalRequestID)
		if err != nil {
			return err
		}
		// What a reload that removed this approver leaves: their vote,
		// their key gone from the trusted approvers.
		req.Votes = append(req.Votes, approval.Vote{Approver: departed.Public().String(), Decision: approval.DecisionApproved, TokenID: "t-departed"})
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	so, se, code := w.run(adminEnv(), "approval", "list")
	if code != 0 || !strings.Contains(so, "0/2") {
		t.Fatalf("approval list (%d, %s) does not show 0/2 approvals:\n%s", code, se, so)
	}
	so, se, code = w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 || !strings.Contains(so, "0/2 approved") {
		t.Fatalf("approval show (%d, %s) does not show 0/2 approved:\n%s", code, se, so)
	}
}
