package slack_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/channels/slack"
)

// The governed intent's context and action_category are the agent's word
// to approvers besides its purpose, and an approval binds them
// (parameter_hash covers the whole intent): the dashboard draws both
// ("Context (from the agent)", "Category"), docs/approver.md promises
// them. The Slack message showed the purpose and the amount only, and
// offered Approve: a custodial click signed for a context nobody in Slack
// was shown. The message shows both.
func TestMessageShowsTheIntentsContextAndCategory(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":450,"currency":"USD"}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"},"action_category":"goodwill_refund",`+
			`"context":{"ticket":"T-99","payout":"to the new IBAN DE02 1203 0000 0000 2020 51"}}`)
	id := out.ApprovalRequestID
	blocks := w.posted(t, id).Get("blocks")
	for _, want := range []string{"goodwill_refund", "T-99", "DE02 1203 0000 0000 2020 51"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("the message does not show %q of the intent the approval binds: %s", want, blocks)
		}
	}
	if !strings.Contains(blocks, slack.ActionApprove) {
		t.Fatalf("no Approve button: %s", blocks)
	}
}
