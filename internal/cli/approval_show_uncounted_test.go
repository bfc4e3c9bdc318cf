package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
)

// `chio approval show` of a pending request printed the vote of an
// approver a reload has removed since like any other ("VOTE approved by
// Departed Lead …") beside a QUORUM that leaves it out ("0/2 approved"):
// nothing said which vote that was. Slack's message and the dashboard
// mark it "not counted: no longer an approver of this request"; the
// table must too, and only on that vote.
func TestApprovalShowMarksAVoteThatNoLongerCounts(t *testing.T) {
	w := newApprovalWorld(t)
	departed, _ := keys.Generate(nil)
	id := w.parkStaged(t, func(req *approval.Request) {
		// What a reload that removed this approver leaves: their vote,
		// their key gone from the trusted approvers.
		req.Votes = append(req.Votes, approval.Vote{Approver: departed.Public().String(), DisplayName: "Departed Lead",
			Decision: approval.DecisionApproved, TokenID: "t-departed", Channel: "api"})
	})
	vote, so := w.showLine(t, id, "VOTE", "")
	if !strings.Contains(vote, "Departed Lead") || !strings.Contains(vote, approval.NoLongerApproverNote) ||
		strings.Count(so, "not counted") != 1 {
		t.Fatalf("approval show lists the removed approver's vote as %q; want it marked as not counted:\n%s", vote, so)
	}
}
