package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// An agent runs with the Finance Lead's key, and its refund parks for the
// CFO (the lead is an approver of the grant too): the kernel never counts
// the lead's vote on it (approval.Request.MayDecide). A click by the lead
// was answered "This request must be signed with your own key", with a
// link to sign a vote the kernel refuses; with slack_custodial, chiod
// signed it in the lead's name before the kernel refused it. The click is
// answered with why the lead's vote does not count, and nothing is signed.
// (With slack_custodial the kernel's refusal already said why.)
func TestClickOnTheApproversOwnCallSaysWhyItDoesNotCount(t *testing.T) {
	for _, custodial := range []bool{false, true} {
		t.Run(fmt.Sprintf("custodial=%v", custodial), func(t *testing.T) {
			text := testPolicy
			if !custodial {
				text = strings.Replace(text, "slack_custodial = true\n", "", 1)
			}
			w := worldWith(t, text, []string{"refunds", "echo"}, "req-own-")
			capRaw, _, err := w.k.IssueCapability(w.lead.Public(), []string{"refunds"}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			c := &kernel.ToolCall{RequestID: "req-own-1", Capability: capRaw, Server: "demo", Tool: "issue_refund",
				Arguments:      json.RawMessage(`{"customer_id":"cust-1","amount":450,"currency":"USD"}`),
				GovernedIntent: json.RawMessage(`{"purpose":"my own order","max_amount":{"units":450,"currency":"USD"}}`)}
			testkit.Sign(t, c, w.lead, w.clk.Now())
			out, err := w.k.Submit(context.Background(), c)
			if err != nil || out.Status != kernel.StatusPendingApproval {
				t.Fatalf("the lead's own refund did not park for the CFO: %+v %v", out, err)
			}
			id := out.ApprovalRequestID
			w.posted(t, id)
			if code := w.click(lead, slack.ActionApprove, id); code != 200 {
				t.Fatalf("click: %d", code)
			}
			e := w.ephemeralTo(leadID)
			if len(e) != 1 || !strings.Contains(e[0], "made with your own key") || strings.Contains(e[0], "Review & sign") {
				t.Fatalf("the lead's click on their own call was answered %q; want that the kernel never counts their vote on it, and no link to sign it", e)
			}
			w.assertUntouched(t, id, out.RequestID)
		})
	}
}
