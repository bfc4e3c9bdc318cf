package slack_test

import (
	"context"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// escalatedAwayPolicy asks the Finance Lead in Slack, then escalates to
// the CFO in the dashboard only.
const escalatedAwayPolicy = `
[kernel]
public_url = "https://chio.example"

[channels.slack]
bot_token_env = "CHIO_TEST_SLACK_BOT"
signing_secret_env = "CHIO_TEST_SLACK_SECRET"
channel = "#approvals"
api_url = "%[3]s"

[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "echo"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
channels = ["slack"]
timeout_action = "escalate"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["Finance Lead"]
channels = ["slack"]
timeout_seconds = 60
[[grants.approval.escalation.tiers]]
approvers = ["CFO"]
channels = ["dashboard"]
timeout_seconds = 600
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
contact = { slack = "ULEAD01" }
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
`

// A request escalated from a Slack tier to a tier without Slack was never
// told to Slack again: its requests' channels are the current tier's, so
// its resolution went to the dashboard alone, and the Slack message kept
// "Approval requested" with Approve / Deny for good, after the CFO had
// denied the call. The message Slack showed must show how it ended.
func TestMessageOfARequestEscalatedAwayFromSlackShowsItsEnd(t *testing.T) {
	w := worldWith(t, escalatedAwayPolicy, []string{"echo"}, "req-slack-away-")
	out := w.submit(t, "echo", `{"hi":1}`, "")
	id := out.ApprovalRequestID
	w.posted(t, id)

	w.clk.Advance(61 * time.Second) // the Finance Lead's tier passes
	var req *approval.Request
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if req = w.approval(t, id); req.Tier == 1 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("not escalated: tier %d", req.Tier)
		}
	}
	tok := approval.NewToken(req, w.cfo.Public(), approval.DecisionDenied, w.clk.Now(), time.Minute)
	raw, err := tok.Sign(w.cfo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.k.RespondWith(context.Background(), id, raw,
		kernel.RespondOptions{Outcome: approval.DecisionDenied, Channel: "dashboard"}); err != nil {
		t.Fatal(err)
	}
	if req := w.approval(t, id); req.Status != approval.StatusDenied {
		t.Fatalf("not denied: %s", req.Status)
	}
	w.updated(t, "1700000000.000001", "Denied")
}
