package receipt

import (
	"testing"
)

// What binds a deciding token to who signed it is the final receipt's
// approver: the kernel writes it with approval_token_id, always
// (kernel chainReceipt). A final receipt naming a token id and no
// approver passed verify, and then the key that signed it was whatever
// the unsigned evidence said: any key's token of that id, listed as a
// trusted approver by the file itself, verified as the deciding vote.
func TestVerifyFinalNamingATokenButNoApprover(t *testing.T) {
	rs := fxReceipts()
	delete(rs[3].Metadata, "approver") // rc-4, decided by at-1
	other := fxOther.Public().String()
	ev := fxEvidence(t)
	ev[0] = ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "refunds", TrustedApprovers: []string{other},
		Votes: []EvidenceVote{{Approver: other, Token: fxSignToken(t, fxOther, fxToken{ID: "at-1", Subject: fxAgent, GovernedIntentHash: fxHash("req-2"), RequestID: "ar-1", Decision: "approved"})}}}
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev))
	if rep.OK() {
		t.Fatalf("a final receipt naming approval_token_id but no approver verifies, its token signed by a key of the file's choosing")
	}
	expectProblem(t, rep, 5, "names approval_token_id at-1 but no approver")
}
