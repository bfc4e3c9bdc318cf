package receipt

import (
	"encoding/json"
	"testing"
)

// Batch evidence that no receipt names is still checked: a forged standing
// approval (signed by nobody) added to an export makes it fail, and so does
// a valid one no receipt names (the kernel exports only named batches).
func TestUnreferencedBatchEvidenceIsAProblem(t *testing.T) {
	forged := json.RawMessage(`{"approver":"` + fxApprover.Public().String() + `","id":"bt-forged","not_after":9999999999,"not_before":1,"schema":"chio.batch-approval.v1","server_pattern":"*","signature":"` + fxHash("x") + fxHash("y") + `","tool_pattern":"*"}`)
	ev := append(fxEvidence(t), BatchEvidence{Type: EvidenceBatch, BatchApprovalID: "bt-forged", Token: forged})
	rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, ev))
	if rep.OK() {
		t.Fatalf("an export carrying a forged batch token verifies OK")
	}
	expectProblem(t, rep, 0, "batch bt-forged: no receipt names it, and token bt-forged: signature")

	rs := fxReceipts()[:6] // without rc-7, the only receipt naming bt-1
	rep = verifyBytes(t, fxExport(t, rs, fxKernel, nil))
	expectProblem(t, rep, 0, "batch bt-1: no receipt names it")
}
