package kernel_test

import (
	"context"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// A reload that lowers deny_quorum to the denials already recorded ends
// the request denied (guard human-approval): people denied it. Its receipt
// named no one: no approval_token_id, no approver, no votes, so the export
// carried none of the signed denials, `--guard human-approval` listed a
// refusal by nobody, and verify checked nothing of it. Like the deny a
// vote decides, it names the latest counted denial and every vote.
func TestReloadDenialNamesTheDenials(t *testing.T) {
	a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
	ctx := context.Background()
	out := a.park(t, `{"x":1}`)
	a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved)
	a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionDenied)
	if err := a.k.ApplyPolicy(ctx, honestLogPolicyFor(t, 2, 1, "", financeLead, cfo, sre)); err != nil {
		t.Fatal(err)
	}
	r, _ := a.k.Approval(out.ApprovalRequestID)
	if r.Status != approval.StatusDenied || r.Resolution == nil {
		t.Fatalf("after the reload the request is %s", r.Status)
	}
	rc := a.w.Receipt(t, r.Resolution.ReceiptID)
	if rc.Decision.Guard != "human-approval" || rc.Metadata["approver"] != cfo.Public().String() || rc.Metadata["approval_token_id"] == nil ||
		len(keysOf(t, rc.Metadata["approvers"])) != 1 || len(keysOf(t, rc.Metadata["dissenters"])) != 1 {
		t.Fatalf("deny receipt (guard %s) names approver %v, token %v, approvers %v, dissenters %v; want the CFO's denial and both votes",
			rc.Decision.Guard, rc.Metadata["approver"], rc.Metadata["approval_token_id"], rc.Metadata["approvers"], rc.Metadata["dissenters"])
	}
	if rep := a.mustVerify(t, "denied at a reload"); rep.Tokens != 2 {
		t.Fatalf("verified %d tokens, want the 2 votes", rep.Tokens)
	}
}
