package kernel_test

import (
	"context"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// The answer to the vote that decides a request counts its approvals as
// its receipt does. The SRE's "eu" decides the question beside the CFO's
// "eu"; the Finance Lead's "us", trusted again by a reload, is in the
// receipt's uncounted. The SRE's answer (POST /approvals/{id}/respond's
// "approvals") said 3 of quorum 2: every counted approval, agreeing or not.
func TestDecidingAnswerCountsTheApprovalsItsReceiptCounts(t *testing.T) {
	f, out := retrustedDisagreement(t, 2, true)
	id := out.ApprovalRequestID
	res, err := f.k.Respond(context.Background(), id, f.token(t, id, sre, approval.DecisionApproved, answering("eu")), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the SRE's answer: %+v %v", res, err)
	}
	if res.Approvals != 2 {
		t.Fatalf("the deciding answer says %d of quorum %d approvals; its receipt counts 2 (the Finance Lead's other answer is uncounted)", res.Approvals, res.Quorum)
	}
}
