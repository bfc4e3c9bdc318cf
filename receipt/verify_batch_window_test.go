package receipt

import (
	"testing"

	"github.com/chiokernel/chio/internal/signed"
)

// A standing approval's window must be one approval.VerifyBatch accepts
// (the kernel refuses any other when the batch is created): not_after
// after not_before, at most 30 days apart. The window's ends alone were
// checked against the receipt, so a batch no kernel would have stored
// (valid for a year, or with its ends reversed) verified OK as covering
// the calls it allowed.
func TestBatchWindowMustBeOneTheKernelAccepts(t *testing.T) {
	ts := fxReceipts()[6].Timestamp / 1000 // rc-7, allowed under bt-1
	cases := map[string][2]int64{
		"window of 30 days and 1 s": {ts - 10, ts - 10 + 30*86400 + 1},
		"window of a year":          {ts - 10, ts + 365*86400},
		"window reversed":           {ts + 50, ts + 30},
		"window empty":              {ts + 30, ts + 30},
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			batch, err := signed.Sign(fxApprover, batchTokenSchema, map[string]any{"schema": batchTokenSchema, "id": "bt-1",
				"approver": fxApprover.Public().String(), "server_pattern": "payments", "tool_pattern": "issue_*",
				"not_before": w[0], "not_after": w[1]})
			if err != nil {
				t.Fatal(err)
			}
			ev := append(fxEvidence(t)[:2], BatchEvidence{Type: EvidenceBatch, BatchApprovalID: "bt-1", Token: batch})
			rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, ev))
			if rep.OK() {
				t.Fatalf("receipt rc-7 verifies under batch bt-1 with window [%d, %d) (%d s), which no kernel accepts", w[0], w[1], w[1]-w[0])
			}
			expectProblem(t, rep, 0, "does not cover this receipt")
		})
	}
	// 30 days exactly is the longest window the kernel accepts.
	batch, err := signed.Sign(fxApprover, batchTokenSchema, map[string]any{"schema": batchTokenSchema, "id": "bt-1",
		"approver": fxApprover.Public().String(), "server_pattern": "payments", "tool_pattern": "issue_*",
		"not_before": ts - 10, "not_after": ts - 10 + 30*86400})
	if err != nil {
		t.Fatal(err)
	}
	ev := append(fxEvidence(t)[:2], BatchEvidence{Type: EvidenceBatch, BatchApprovalID: "bt-1", Token: batch})
	if rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, ev)); !rep.OK() {
		t.Fatalf("a 30-day window: %+v", rep.Problems)
	}
}
