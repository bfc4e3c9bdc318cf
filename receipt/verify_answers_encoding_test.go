package receipt

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/chiokernel/chio/internal/signed"
)

// The kernel stores each token as the approver presented it, and compares
// a question's answers canonically (approval.SameAnswers): a token signed
// by another SDK, whose answers' members come in another order (or with
// other escapes or number spellings), gives the same answers, and the
// final receipt counts it. verify compared the answers' bytes as found in
// the export, and failed such an honest log as a counted vote that
// answered otherwise.
func TestVerifyAnswersCompareCanonically(t *testing.T) {
	lead, cfo := fxApprover.Public().String(), fxCFO.Public().String()
	leadTok, err := signed.Sign(fxApprover, approvalTokenSchema, map[string]any{"schema": approvalTokenSchema, "id": "at-1", "approver": lead, "subject": fxAgent,
		"governed_intent_hash": fxHash("req-2"), "request_id": "ar-1", "decision": "approved",
		"issued_at": int64(1_700_000_000), "expires_at": int64(1_700_003_600), "answers": json.RawMessage(`{"env":"prod","n":10}`)})
	if err != nil {
		t.Fatal(err)
	}
	cfoTok, err := signed.Sign(fxCFO, approvalTokenSchema, map[string]any{"schema": approvalTokenSchema, "id": "at-c", "approver": cfo, "subject": fxAgent,
		"governed_intent_hash": fxHash("req-2"), "request_id": "ar-1", "decision": "approved",
		"issued_at": int64(1_700_000_000), "expires_at": int64(1_700_003_600), "answers": json.RawMessage(`{"env":"prod","n":10}`)})
	if err != nil {
		t.Fatal(err)
	}
	// The CFO's SDK wrote the same answers otherwise: members reordered,
	// a character escaped, the number as 1e1. Its signature (over the
	// canonical form) still verifies, as the kernel found.
	presented := bytes.Replace(cfoTok, []byte(`"answers":{"env":"prod","n":10}`), []byte(`"answers":{"n":1e1,"env":"pro\u0064"}`), 1)
	if bytes.Equal(presented, cfoTok) {
		t.Fatal("fixture: answers not found in the token")
	}
	if err := signed.Verify(presented, approvalTokenSchema, fxCFO.Public()); err != nil {
		t.Fatalf("fixture: the re-encoded token must still verify: %v", err)
	}
	rs := fxReceipts()
	rs[3].Metadata["approvers"] = []any{lead, cfo}
	rs[3].Metadata["dissenters"] = []any{}
	ev := append([]any{ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "ask", TrustedApprovers: []string{lead, cfo},
		Votes: []EvidenceVote{{Approver: lead, Token: leadTok}, {Approver: cfo, Token: presented}}}}, fxEvidence(t)[1:]...)
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev))
	if !rep.OK() {
		t.Fatalf("an honest log, whose counted votes give the same answers written otherwise, failed:\n%s", problems(rep))
	}
}
