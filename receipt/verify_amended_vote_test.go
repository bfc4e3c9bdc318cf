package receipt

import (
	"encoding/json"
	"testing"

	"github.com/chiokernel/chio/internal/signed"
)

// An approval that amends the call resolves it at once (kernel: only on a
// quorum-1 tool call, refused unless it decides), so it is the deciding
// token, which verify holds to the receipt (amended, the hashes). verify
// read amended_arguments of the deciding token only: a receipt that
// counts, beside the deciding approval, one that approved other arguments
// than those that ran (listed in approvers, not uncounted) verified OK.
func TestVerifyOnlyTheDecidingTokenAmends(t *testing.T) {
	lead, cfo := fxApprover.Public().String(), fxCFO.Public().String()
	tok := map[string]any{"schema": approvalTokenSchema, "id": "at-c", "approver": cfo, "subject": fxAgent,
		"governed_intent_hash": fxHash("req-2"), "request_id": "ar-1", "decision": "approved",
		"issued_at": int64(1_700_000_000), "expires_at": int64(1_700_003_600), "amended_arguments": json.RawMessage(`{"amount":1}`)}
	raw, err := signed.Sign(fxCFO, approvalTokenSchema, tok)
	if err != nil {
		t.Fatal(err)
	}
	rs := fxReceipts()
	rs[3].Metadata["approvers"] = []any{lead, cfo}
	rs[3].Metadata["dissenters"] = []any{}
	first := fxEvidence(t)[0].(ApprovalEvidence)
	first.TrustedApprovers = append(first.TrustedApprovers, cfo)
	first.Votes = append(first.Votes, EvidenceVote{Approver: cfo, Token: raw})
	ev := append([]any{first}, fxEvidence(t)[1:]...)
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev))
	expectProblem(t, rep, 0, "approval ar-1: token at-c carries amended_arguments but is not the deciding token at-1")
}

// A dissent may amend: an amending approval that arrives when the denials
// recorded already meet deny_quorum is recorded, and the denial decides.
func TestVerifyAmendingDissentOfADeny(t *testing.T) {
	lead, cfo := fxApprover.Public().String(), fxCFO.Public().String()
	tok := map[string]any{"schema": approvalTokenSchema, "id": "at-c", "approver": cfo, "subject": fxAgent,
		"governed_intent_hash": fxHash("req-5"), "request_id": "ar-2", "decision": "approved",
		"issued_at": int64(1_700_000_000), "expires_at": int64(1_700_003_600), "amended_arguments": json.RawMessage(`{"amount":1}`)}
	raw, err := signed.Sign(fxCFO, approvalTokenSchema, tok)
	if err != nil {
		t.Fatal(err)
	}
	rs := fxReceipts()
	rs[5].Metadata["approvers"] = []any{lead} // rc-6: ar-2 denied by at-2
	rs[5].Metadata["dissenters"] = []any{cfo}
	ev := fxEvidence(t)
	second := ev[1].(ApprovalEvidence)
	second.TrustedApprovers = append(second.TrustedApprovers, cfo)
	second.Votes = append(second.Votes, EvidenceVote{Approver: cfo, Token: raw})
	ev[1] = second
	if rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev)); !rep.OK() {
		t.Fatalf("problems:\n%s", problems(rep))
	}
}
