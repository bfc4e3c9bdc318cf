package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// `chio approval show` of a pending request printed the vote of an
// approver a reload has removed since like any other ("VOTE approved by
// Departed Lead …") beside a QUORUM that leaves it out ("0/2 approved"):
// nothing said which vote that was. Slack's message and the dashboard
// mark it "not counted: no longer an approver of this request"; the
// table must too, and only on that vote.
func TestApprovalShowMarksAVoteThatNoLongerCounts(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	departed, _ := keys.Generate(nil)
	err := w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		req, err := tx.Approval(out.ApprovalRequestID)
		if err != nil {
			return err
		}
		// What a reload that removed this approver leaves: their vote,
		// their key gone from the trusted approvers.
		req.Votes = append(req.Votes, approval.Vote{Approver: departed.Public().String(), DisplayName: "Departed Lead",
			Decision: approval.DecisionApproved, TokenID: "t-departed", Channel: "api"})
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 {
		t.Fatalf("approval show: exit %d: %s", code, se)
	}
	var vote string
	for _, l := range strings.Split(so, "\n") {
		if strings.HasPrefix(l, "VOTE") {
			vote = l
		}
	}
	if !strings.Contains(vote, "Departed Lead") || !strings.Contains(vote, "not counted: no longer an approver of this request") ||
		strings.Count(so, "not counted") != 1 {
		t.Fatalf("approval show lists the removed approver's vote as %q; want it marked as not counted:\n%s", vote, so)
	}
}
