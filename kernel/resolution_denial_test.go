package kernel_test

import (
	"context"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// A request that denials end names, in its resolution, the denial its
// receipt names: who decided it (decided_by) and the token (token_id, which
// GET /v1/calls/{id} reads as the deciding vote: its approver, their note,
// what `chio await` prints as "denied by …"). Two ends wrote otherwise.

// resolutionNamesReceiptDenial fails unless req's resolution names the
// same denial as its receipt: the CFO's.
func resolutionNamesReceiptDenial(t *testing.T, a *honestLog, req *approval.Request, what string) {
	t.Helper()
	if req.Status != approval.StatusDenied || req.Resolution == nil {
		t.Fatalf("%s: the request is %s", what, req.Status)
	}
	rc := a.w.Receipt(t, req.Resolution.ReceiptID)
	if rc.Metadata["approver"] != cfo.Public().String() {
		t.Fatalf("%s: the deny receipt names approver %v, want the CFO's denial", what, rc.Metadata["approver"])
	}
	var cfoToken string
	for _, v := range req.Votes {
		if v.Approver == cfo.Public().String() {
			cfoToken = v.TokenID
		}
	}
	if req.Resolution.DecidedBy != "CFO" || req.Resolution.TokenID != cfoToken || rc.Metadata["approval_token_id"] != cfoToken {
		t.Fatalf("%s: the receipt names the CFO's denial %v, but the resolution says decided by %q with token %q (the CFO's is %s)",
			what, rc.Metadata["approval_token_id"], req.Resolution.DecidedBy, req.Resolution.TokenID, cfoToken)
	}
}

// A reload lowering deny_quorum to the CFO's recorded denial ends the
// request: the receipt names the CFO, the resolution named nobody.
func TestReloadDenialResolutionNamesTheDenial(t *testing.T) {
	a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
	ctx := context.Background()
	out := a.park(t, `{"x":1}`)
	a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionDenied)
	if err := a.k.ApplyPolicy(ctx, honestLogPolicyFor(t, 2, 1, "", financeLead, cfo, sre)); err != nil {
		t.Fatal(err)
	}
	req, err := a.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	resolutionNamesReceiptDenial(t, a, req, "denied at the reload")
}

// The Finance Lead's approval commits after that reload and before its
// reconcile: the CFO's denial, meeting the lowered deny_quorum, decides
// (recordVote), and the receipt names it; the resolution named the Finance
// Lead's approving token, so GET /v1/calls/{id} said the call was denied
// by the Finance Lead, who approved it.
func TestDenialMetAtAnApprovalResolutionNamesTheDenial(t *testing.T) {
	a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
	ctx := context.Background()
	out := a.park(t, `{"x":1}`)
	id := out.ApprovalRequestID
	a.vote(t, id, cfo, approval.DecisionDenied)
	a.k.BeforeReconcileCommit(func() {
		r := a.vote(t, id, financeLead, approval.DecisionApproved)
		if r.Outcome != approval.StatusDenied {
			t.Errorf("the Finance Lead's approval under deny_quorum 1 met: %+v", r)
		}
	})
	if err := a.k.ApplyPolicy(ctx, honestLogPolicyFor(t, 2, 1, "", financeLead, cfo, sre)); err != nil {
		t.Fatal(err)
	}
	res, err := a.k.Approval(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Votes) != 2 {
		t.Fatalf("votes %d, want the CFO's denial and the Finance Lead's approval", len(res.Votes))
	}
	resolutionNamesReceiptDenial(t, a, res, "denied at the Finance Lead's approval")
}
