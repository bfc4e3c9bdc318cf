package receipt

import (
	"testing"

	"github.com/chiokernel/chio/internal/signed"
)

// A standing approval's max_calls is part of what its approver signed, as
// its patterns and window are: a log with more batch-approved receipts
// naming one batch than the calls its token allows holds calls no one
// approved (the kernel counts each claim in the allow's own commit, so it
// never writes one too many). verify reported such a log OK.
func TestBatchUsedBeyondItsMaxCallsIsAProblem(t *testing.T) {
	approver := fxApprover.Public().String()
	rs := fxReceipts()
	second := *rs[6] // rc-7, batch-approved under bt-1
	second.ID, second.Seq, second.RequestID, second.ParameterHash = "rc-8", 8, "req-8", fxHash("req-8")
	second.Timestamp += 1000
	rs = append(rs, &second)

	for _, c := range []struct {
		maxCalls int64
		ok       bool
	}{{1, false}, {2, true}} {
		batch, err := signed.Sign(fxApprover, batchTokenSchema, map[string]any{"schema": batchTokenSchema, "id": "bt-1",
			"approver": approver, "server_pattern": "payments", "tool_pattern": "*", "max_calls": c.maxCalls,
			"not_before": 1_700_000_000, "not_after": 1_700_003_600})
		if err != nil {
			t.Fatal(err)
		}
		ev := append(fxEvidence(t)[:2], BatchEvidence{Type: EvidenceBatch, BatchApprovalID: "bt-1", Token: batch})
		rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev))
		if c.ok {
			if !rep.OK() {
				t.Fatalf("two receipts under a batch of max_calls %d:\n%s", c.maxCalls, problems(rep))
			}
			continue
		}
		if rep.OK() {
			t.Fatalf("two receipts under batch bt-1 of max_calls %d verify OK", c.maxCalls)
		}
		expectProblem(t, rep, 0, "batch bt-1: 2 receipts name it, more than its max_calls of 1")
	}
}
