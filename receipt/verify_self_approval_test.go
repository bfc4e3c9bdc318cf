package receipt

import (
	"encoding/json"
	"testing"

	"github.com/chiokernel/chio/internal/signed"
)

// The kernel never counts an approval token signed by the requesting
// agent's own key (approval.ErrSelfApproval). verify checked that of a
// standing approval's receipts, not of a per-call token: a chain whose
// deciding token's approver is the call's subject verified OK.
func TestApprovalTokenOfTheCallsOwnAgentIsAProblem(t *testing.T) {
	self := fxApprover.Public().String() // the agent is the approver's key
	rs := fxReceipts()
	rs[1].Subject, rs[3].Subject = self, self // rc-2 parks req-2 under ar-1, rc-4 allows it
	tok := map[string]any{"schema": approvalTokenSchema, "id": "at-1", "approver": self, "subject": self,
		"governed_intent_hash": fxHash("req-2"), "request_id": "ar-1", "decision": "approved",
		"issued_at": int64(1_700_000_003), "expires_at": int64(1_700_000_603)}
	raw, err := signed.Sign(fxApprover, approvalTokenSchema, tok)
	if err != nil {
		t.Fatal(err)
	}
	evidence := append([]any{ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "refunds",
		TrustedApprovers: []string{self}, Votes: []EvidenceVote{{Approver: self, Token: json.RawMessage(raw)}}}}, fxEvidence(t)[1:]...)
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, evidence))
	if rep.OK() {
		t.Fatalf("a call approved by a token of its own agent's key verifies OK")
	}
	expectProblem(t, rep, 0, "approval ar-1: token at-1 is signed by the call's own agent")
}
