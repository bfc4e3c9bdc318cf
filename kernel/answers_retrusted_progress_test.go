package kernel_test

import (
	"context"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// The answer that leaves a question open after a retrusted disagreement
// (the Finance Lead's "us" beside the CFO's and the SRE's "eu", quorum 3)
// was told "3 of 3 so far" (RespondResult.Approvals counted every counted
// approval) while the kernel, counting only agreeing answers, has two and
// keeps the question open. The SRE must be told 2 of 3.
func TestAnswerLeavingARetrustedDisagreementOpenIsToldTheAgreeingCount(t *testing.T) {
	f, out := retrustedDisagreement(t, 3, true)
	id := out.ApprovalRequestID
	res, err := f.k.Respond(context.Background(), id, f.token(t, id, sre, approval.DecisionApproved, answering("eu")), "", "")
	if err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("the SRE's answer: %+v %v; want the question still open", res, err)
	}
	if res.Approvals != 2 || res.Quorum != 3 {
		t.Fatalf("the SRE is told %d of %d approvals while the question is open; want 2 of 3 (only the two \"eu\" answers agree)", res.Approvals, res.Quorum)
	}
}
