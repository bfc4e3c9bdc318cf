package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/testkit"
)

// A vote that committed, followed by a failure (the store goes down before
// the approved call is run or denied), used to answer 503 "unavailable" —
// "nothing happened, try again" — or 500 outcome_unknown with no word of
// the vote. It must answer vote_recorded (not 503), say the vote is
// recorded, and the same token presented again is a replay.
func TestRespondAfterTheVoteCommittedSaysRecorded(t *testing.T) {
	for _, revoked := range []bool{false, true} {
		name := map[bool]string{false: "the allow commit fails", true: "the deny on resume cannot commit"}[revoked]
		t.Run(name, func(t *testing.T) {
			st := testkit.NewDownAfterStore()
			f := newApprovalsFixtureOn(t, st.Wrap)
			out := f.pendingRefund(t)
			if revoked {
				// The call is denied when it resumes (capability revoked).
				rec, err := f.k.Call(out.RequestID)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.k.Revoke(context.Background(), rec.CapabilityID); err != nil {
					t.Fatal(err)
				}
			}
			tok := f.token(t, keyAlice, out.ApprovalRequestID, approval.DecisionApproved, nil)
			st.DownAfter(1) // the vote's commit lands; nothing after it
			code, body := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil)
			msg, _ := body["message"].(string)
			if code == http.StatusServiceUnavailable || body["error"] != httpapi.CodeVoteRecorded ||
				code != http.StatusInternalServerError || !strings.Contains(msg, "is recorded") {
				t.Fatalf("the vote is durable, yet the approver was answered %d %v", code, body)
			}
			st.Up()
			req, err := f.k.Approval(out.ApprovalRequestID)
			if err != nil || len(req.Votes) != 1 || req.Status != approval.StatusApproved {
				t.Fatalf("%+v %v", req, err)
			}
			if code, body := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil); code != http.StatusConflict {
				t.Fatalf("the same token again: %d %v", code, body)
			}
		})
	}
}
