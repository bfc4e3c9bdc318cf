package receipt

import (
	"testing"
)

// fxAutoApproved is the fixture with ar-1 decided at its deadline by the
// kernel's advisory vote (timeout_action = auto_approve_advisory): rc-4
// is auto_approved, its token signed by the kernel key. The suspension
// rc-2 (at 1_700_000_002_000 ms) records deadline; rc-4 is at
// 1_700_000_004_000 ms.
func fxAutoApproved(t *testing.T, deadline int64) []byte {
	t.Helper()
	rs := fxReceipts()
	rs[1].Metadata["deadline"] = deadline
	kernelKey := fxKernel.Public().String()
	rs[3].Metadata["approver"], rs[3].Metadata["approver_display_name"] = kernelKey, "chio kernel (auto_approve_advisory)"
	rs[3].Metadata["channel"], rs[3].Metadata["auto_approved"], rs[3].Metadata["review_required"] = "timeout", true, true
	ev := fxEvidence(t)
	ev[0] = ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "refunds", TrustedApprovers: []string{fxApprover.Public().String()},
		Votes: []EvidenceVote{{Approver: kernelKey, Token: fxSignToken(t, fxKernel, fxToken{ID: "at-1", Subject: fxAgent, GovernedIntentHash: fxHash("req-2"), RequestID: "ar-1", Decision: "approved"})}}}
	return fxExport(t, rs, fxKernel, ev)
}

// The kernel's advisory vote is cast only once the request's deadline has
// passed (kernel/timers.go: due), and a deadline only ever moves later
// (an escalation, approvers told late), never earlier than the one the
// suspension records. An auto_approved receipt timestamped before that
// deadline is a call run with no human asked while its approvers still
// had time: verify accepted it.
func TestAutoApprovalBeforeTheDeadlineIsAProblem(t *testing.T) {
	if rep := verifyBytes(t, fxAutoApproved(t, 1_700_000_003)); !rep.OK() {
		t.Fatalf("an auto-approval after its deadline:\n%s", problems(rep))
	}
	rep := verifyBytes(t, fxAutoApproved(t, 1_700_003_600)) // an hour after the park: decided 58 minutes early
	if rep.OK() {
		t.Fatalf("an auto_approved receipt an hour before its suspension's deadline verifies OK")
	}
	expectProblem(t, rep, 0, "before the deadline")
}
