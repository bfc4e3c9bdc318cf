package slack

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// A pending request's message lists every recorded vote, and counts only
// those of approvers the request trusts now (Progress): after a reload
// removed the Finance Lead, whose approval is recorded, the message read
// "Finance Lead approved" beside "1 of 2" with nothing to say which
// approval that was. Whoever reads the channel must see that the removed
// approver's vote does not count.
func TestMessageSaysWhichVotesNoLongerCount(t *testing.T) {
	req := &approval.Request{ApprovalID: "ar-1", Status: approval.StatusPending, ToolServer: "pay", ToolName: "refund", Quorum: 2,
		TrustedApprovers: []string{"ed25519:cfo", "ed25519:sre"},
		Votes: []approval.Vote{
			{Approver: "ed25519:lead", DisplayName: "Finance Lead", Decision: approval.DecisionApproved, Channel: "api"},
			{Approver: "ed25519:cfo", DisplayName: "CFO", Decision: approval.DecisionApproved, Channel: "api"},
		}}
	s, lead := renderedText(t, req, "Finance Lead")
	if !strings.Contains(lead, "not counted") || strings.Count(s, "not counted") != 1 {
		t.Fatalf("the removed Finance Lead's vote line %q must say it is not counted, and only theirs:\n%s", lead, s)
	}
}
