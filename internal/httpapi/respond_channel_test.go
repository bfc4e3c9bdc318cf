package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/chiokernel/chio/channels/email"
	"github.com/chiokernel/chio/channels/slack"
)

// The receipt's channel says where a vote entered chiod. Slack and email
// votes enter only through their own endpoints (/slack/interactions, the
// Slack request's HMAC checked, and /email/a/LINK), which record their
// channel themselves; the generic respond route never receives them. A
// client of that route — the dashboard, the CLI, a script — naming one of
// those channels would make the audit say the vote came through Slack or
// email: refused, like the kernel's own timeout and batch, and nothing is
// recorded.
func TestRespondRefusesChannelsWithTheirOwnEndpoint(t *testing.T) {
	f := newApprovalsFixture(t)
	for _, ch := range []string{slack.Name, email.Name} {
		t.Run(ch, func(t *testing.T) {
			out := f.pendingRefund(t)
			path := "/approvals/" + out.ApprovalRequestID + "/respond"
			code, m := f.do(t, "POST", path,
				respondBody(f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil), fmt.Sprintf(`,"channel":%q`, ch)), nil)
			if code != 400 || m["error"] != "bad_request" {
				rid, _ := m["receipt_id"].(string)
				_, rec := f.do(t, "GET", "/v1/receipts/"+rid, "", withBearer(approvalsReader))
				meta, _ := rec["metadata"].(map[string]any)
				t.Fatalf("a vote posted to the respond route as channel %q: %d %v, want 400 bad_request; its receipt %s says channel %v",
					ch, code, m["error"], rid, meta["channel"])
			}
			// Nothing was recorded: the same token still counts, through a
			// channel this route may name.
			code, m = f.do(t, "POST", path,
				respondBody(f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil), `,"channel":"dashboard"`), nil)
			if code != 200 || m["outcome"] != "approved" {
				t.Fatalf("after the refusal: %d %v", code, m)
			}
			// The batch route shares the rule.
			out = f.pendingRefund(t)
			code, m = f.do(t, "POST", "/approvals/batch/respond", fmt.Sprintf(`{"channel":%q,"items":[{"approval_id":%q,"token":%s}]}`,
				ch, out.ApprovalRequestID, f.token(t, keyAlice, out.ApprovalRequestID, "approved", nil)), nil)
			if res, _ := m["results"].([]any); code != 200 || len(res) != 1 || res[0].(map[string]any)["error"] != "bad_request" {
				t.Fatalf("batch respond as channel %q: %d %v", ch, code, m)
			}
		})
	}
}
