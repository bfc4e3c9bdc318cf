package slack_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/internal/testkit"
)

// A custodial click whose vote committed, followed by a failure (the store
// goes down before the approved call is run or denied), used to answer
// "Your vote was not recorded: …": the approver clicks again (refused:
// already voted) or asks someone else, while the audit trail holds the
// vote. The answer must say the vote is recorded.
func TestCustodialClickAfterTheVoteCommittedSaysRecorded(t *testing.T) {
	for _, revoked := range []bool{false, true} {
		name := map[bool]string{false: "the allow commit fails", true: "the deny on resume cannot commit"}[revoked]
		t.Run(name, func(t *testing.T) {
			st := testkit.NewDownAfterStore()
			w := worldOn(t, testPolicy, []string{"refunds", "echo"}, "req-slack-rec-", st.Wrap)
			out := w.refund(t)
			id := out.ApprovalRequestID
			w.posted(t, id)
			if revoked {
				if err := w.k.Revoke(context.Background(), w.tw.Cap.ID); err != nil {
					t.Fatal(err)
				}
			}
			st.DownAfter(1) // the vote's commit lands; nothing after it
			if code := w.click(lead, slack.ActionApprove, id); code != 200 {
				t.Fatalf("click: %d", code)
			}
			e := w.ephemeralTo(leadID)
			if len(e) != 1 || strings.Contains(e[0], "vote was not recorded") || !strings.Contains(e[0], "is recorded") ||
				!strings.Contains(e[0], "do not vote again") {
				t.Fatalf("the vote is durable, yet the approver was told: %v", e)
			}
			st.Up()
			if req := w.approval(t, id); len(req.Votes) != 1 || req.Status != approval.StatusApproved {
				t.Fatalf("%+v", req)
			}
		})
	}
}
