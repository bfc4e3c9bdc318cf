package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/testkit"
)

// A vote whose own commit lands but is reported failed (an fsync error, a
// COMMIT whose answer was lost) may or may not be recorded. It was answered
// 503 "unavailable", the code every SDK reads as "nothing was allowed by
// that request", on POST /approvals/{id}/respond and as a batch item's
// error. It must have its own code, vote_uncertain (status 503 kept, so old
// clients still back off), and the same token presented again is a replay.
func TestRespondWhoseVoteCommitAnswerWasLostSaysUncertain(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "respond", true: "batch respond"}[batch], func(t *testing.T) {
			st := &testkit.LostAnswerStore{}
			f := newApprovalsFixtureOn(t, st.Wrap)
			out := f.pendingRefund(t)
			tok := f.token(t, keyAlice, out.ApprovalRequestID, approval.DecisionApproved, nil)
			present := func() (code int, errCode, msg string) {
				if !batch {
					code, body := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/respond", respondBody(tok, ""), nil)
					errCode, _ = body["error"].(string)
					msg, _ = body["message"].(string)
					return code, errCode, msg
				}
				code, body := f.do(t, "POST", "/approvals/batch/respond",
					fmt.Sprintf(`{"items":[{"approval_id":%q,"token":%s}]}`, out.ApprovalRequestID, tok), nil)
				if code != http.StatusOK {
					t.Fatalf("batch respond: %d %v", code, body)
				}
				item := body["results"].([]any)[0].(map[string]any)
				errCode, _ = item["error"].(string)
				msg, _ = item["message"].(string)
				return 0, errCode, msg // an item has no status of its own
			}
			st.LoseNextAnswer()
			code, errCode, msg := present()
			if (!batch && code != http.StatusServiceUnavailable) || errCode != "vote_uncertain" || !strings.Contains(msg, "may or may not be recorded") {
				t.Fatalf("the vote may be recorded, yet the approver was answered %d %q %q", code, errCode, msg)
			}
			st.Up()
			if req, err := f.k.Approval(out.ApprovalRequestID); err != nil || len(req.Votes) != 1 {
				t.Fatalf("setup: the lost commit did not land: %+v %v", req, err)
			}
			if _, errCode, msg := present(); errCode != "replay_detected" {
				t.Fatalf("the same token again: %q %q", errCode, msg)
			}
		})
	}
}
