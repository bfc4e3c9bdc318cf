package receipt

import (
	"encoding/json"
	"testing"

	"github.com/chiokernel/chio/internal/signed"
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

// A batch-approved receipt must be within its batch token's scope, as
// approval.Batch.Covers required: subject (if set), server and tool
// patterns, and the window [not_before, not_after).
func TestBatchTokenMustCoverTheReceipt(t *testing.T) {
	approver := fxApprover.Public().String()
	ts := fxReceipts()[6].Timestamp / 1000 // rc-7, payments/issue_refund by fxAgent
	cases := map[string]map[string]any{
		"other subject":       {"subject": "ed25519:" + fxHash("another agent")},
		"other server":        {"server_pattern": "readonly"},
		"other tool":          {"tool_pattern": "status"},
		"prefix not matching": {"tool_pattern": "issue_credit*"},
		"window closed":       {"not_before": int64(1), "not_after": int64(2)},
		"window ends at ts":   {"not_after": ts},
		"window not yet open": {"not_before": ts + 3600},
		"another kernel's":    {"audience": "ed25519:" + fxHash("another kernel")},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			tok := map[string]any{"schema": batchTokenSchema, "id": "bt-1", "approver": approver, "server_pattern": "payments",
				"tool_pattern": "issue_*", "max_calls": 1, "not_before": ts - 10, "not_after": ts + 3600}
			for k, v := range change {
				tok[k] = v
			}
			batch, err := signed.Sign(fxApprover, batchTokenSchema, tok)
			if err != nil {
				t.Fatal(err)
			}
			ev := append(fxEvidence(t)[:2], BatchEvidence{Type: EvidenceBatch, BatchApprovalID: "bt-1", Token: batch})
			rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, ev))
			if rep.OK() {
				t.Fatalf("receipt rc-7 verifies under batch bt-1 %v", tok)
			}
			expectProblem(t, rep, 0, "does not cover this receipt")
		})
	}
}

// A batch token for this log's kernel (audience = the receipts'
// kernel_key) covers its receipts like one made before audience existed.
func TestBatchTokenForThisKernelCovers(t *testing.T) {
	ts := fxReceipts()[6].Timestamp / 1000
	batch, err := signed.Sign(fxApprover, batchTokenSchema, map[string]any{"schema": batchTokenSchema, "id": "bt-1",
		"approver": fxApprover.Public().String(), "audience": fxKernel.Public().String(), "server_pattern": "payments",
		"tool_pattern": "issue_*", "not_before": ts - 10, "not_after": ts + 3600})
	if err != nil {
		t.Fatal(err)
	}
	ev := append(fxEvidence(t)[:2], BatchEvidence{Type: EvidenceBatch, BatchApprovalID: "bt-1", Token: batch})
	if rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, ev)); !rep.OK() {
		t.Fatalf("%+v", rep.Problems)
	}
}
