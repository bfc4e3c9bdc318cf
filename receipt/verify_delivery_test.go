package receipt

import (
	"fmt"
	"testing"
)

// A call whose delivery failed (or whose outcome is unknown) gets a second
// receipt from the kernel (kernel/deliver.go, settlementOf): incomplete,
// previous_receipt_id = the call's allow receipt, written from the same
// call record. fxOutcome builds one as the kernel does.
func fxOutcome(seq int, of *Receipt, execution string) *Receipt {
	r := *of
	r.ID, r.Seq, r.Timestamp = fmt.Sprintf("rc-%d", seq), uint64(seq), of.Timestamp+int64(seq)
	r.Decision = Decision{Verdict: Incomplete, Reason: "outcome unknown: connection reset"}
	r.Metadata = map[string]any{"previous_receipt_id": of.ID, "execution": execution,
		"tool_error": "outcome unknown: connection reset", "attempts": 1, "delivery": of.Metadata["delivery"]}
	return &r
}

// fxDeliveryReceipts: the fixture's three allows (a direct call rc-1, an
// approved call rc-4, a batch-approved call rc-7), each followed by its
// delivery outcome (rc-8, rc-9, rc-10).
func fxDeliveryReceipts() []*Receipt {
	rs := fxReceipts()
	rs[0].Metadata = map[string]any{"delivery": "at_least_once"}
	rs[3].Metadata["delivery"] = "at_most_once"
	rs[6].Metadata["delivery"] = "at_least_once"
	return append(rs, fxOutcome(8, rs[0], "tool_error"), fxOutcome(9, rs[3], "unknown"), fxOutcome(10, rs[6], "not_delivered"))
}

func TestVerifyDeliveryOutcomesHonest(t *testing.T) {
	rep := verifyBytes(t, fxExport(t, fxDeliveryReceipts(), fxKernel, nil))
	if !rep.OK() {
		t.Fatalf("honest export failed:\n%s", problems(rep))
	}
	if rep.Receipts != 10 || rep.Chains != 2 || rep.Pending != 0 || rep.Deliveries != 3 {
		t.Fatalf("report %+v", rep)
	}
}

// Every previous_receipt_id of a delivery outcome is checked: it names an
// earlier allow receipt of the same call, and one allow has at most one
// outcome. Each of these logs passed verify before (the link was never
// read: an incomplete receipt without approval_request_id was skipped).
func TestVerifyBrokenDeliveryLink(t *testing.T) {
	cases := []struct {
		name   string
		mutate func([]*Receipt)
		line   int
		want   string
	}{
		{"names no receipt", func(rs []*Receipt) { rs[7].Metadata["previous_receipt_id"] = "rc-nowhere" }, 9,
			"receipt rc-8 (seq 8): broken delivery link: previous_receipt_id rc-nowhere is not an earlier receipt in the log"},
		{"names a later receipt", func(rs []*Receipt) {
			rs[7].Metadata["previous_receipt_id"] = "rc-10"
			later := *rs[0]
			later.ID, later.Seq, later.Timestamp = "rc-10", 10, rs[9].Timestamp
			rs[9] = &later // an allow of the same call, after the outcome
		}, 9, "broken delivery link: previous_receipt_id rc-10 is not an earlier receipt in the log"},
		{"names a deny", func(rs []*Receipt) { rs[7].Metadata["previous_receipt_id"] = "rc-3" }, 9,
			"broken delivery link: previous_receipt_id rc-3 (line 4) is not a verified allow receipt"},
		{"names a suspension", func(rs []*Receipt) { rs[8].Metadata["previous_receipt_id"] = "rc-2" }, 10,
			"broken delivery link: previous_receipt_id rc-2 (line 3) is not a verified allow receipt"},
		{"names another request's allow", func(rs []*Receipt) { rs[7].Metadata["previous_receipt_id"] = "rc-4" }, 9,
			"broken delivery link: not for the call allow receipt rc-4 decided"},
		{"other request_id", func(rs []*Receipt) { rs[7].RequestID = "req-9" }, 9,
			"broken delivery link: not for the call allow receipt rc-1 decided"},
		{"other parameters", func(rs []*Receipt) { rs[7].ParameterHash = fxHash("other arguments") }, 9,
			"broken delivery link: not for the call allow receipt rc-1 decided"},
		{"other subject", func(rs []*Receipt) { rs[7].Subject = fxApprover.Public().String() }, 9,
			"broken delivery link: not for the call allow receipt rc-1 decided"},
		{"other tool", func(rs []*Receipt) { rs[8].ToolName = "charge_card" }, 10,
			"broken delivery link: not for the call allow receipt rc-4 decided"},
		{"other delivery semantics", func(rs []*Receipt) { rs[8].Metadata["delivery"] = "at_least_once" }, 10,
			"broken delivery link: not for the call allow receipt rc-4 decided"},
		{"two outcomes of one allow", func(rs []*Receipt) { rs[8] = fxOutcome(9, rs[0], "unknown") }, 10,
			"receipt rc-9 (seq 9): allow receipt rc-1 already has a delivery outcome receipt rc-8"},
		{"incomplete linked to nothing", func(rs []*Receipt) { delete(rs[7].Metadata, "previous_receipt_id") }, 9,
			"incomplete receipt with neither approval_request_id (awaiting approval) nor previous_receipt_id (a delivery outcome)"},
		{"suspension with a link", func(rs []*Receipt) { rs[1].Metadata["previous_receipt_id"] = "rc-1" }, 3,
			"incomplete receipt with both approval_request_id and previous_receipt_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := fxDeliveryReceipts()
			c.mutate(rs)
			rep := verifyBytes(t, fxExport(t, rs, fxKernel, nil))
			expectProblem(t, rep, c.line, c.want)
			if rep.ProblemCount != 1 {
				t.Fatalf("%d problems, want only the one:\n%s", rep.ProblemCount, problems(rep))
			}
		})
	}
}
