package slack_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
)

// A custodial grant for the confirm verb: the lead confirms from Slack.
const custodialConfirmPolicy = `
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

[[grants]]
id = "confirm"
server = "demo"
tool = "confirm"
[grants.approval]
timeout_seconds = 600
channels = ["slack"]
slack_custodial = true
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
contact = { slack = "ULEAD01" }
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
contact = { slack = "UCFO" }
`

// A confirm request binds its details (they are in the arguments, hence in
// the parameter hash the custodial token signs), and the agent acts on what
// was confirmed. Slack used to draw arguments for tool calls only, and to
// offer Approve all the same: a click confirmed details nobody was shown.
// Now the details are shown, and details too long to show whole leave the
// message without Approve (a click is refused).
func TestSlackConfirmShowsTheDetailsItApproves(t *testing.T) {
	w := worldWith(t, custodialConfirmPolicy, []string{"confirm"}, "req-confirm-")
	out := w.submit(t, "confirm",
		`{"prompt":"Deploy build 4711 to staging?","details":{"environment":"production","drop_database":true}}`, "")
	id := out.ApprovalRequestID
	msg := w.posted(t, id)
	if shown := msg.Get("blocks"); !strings.Contains(shown, "production") || !strings.Contains(shown, "drop_database") {
		t.Fatalf("the confirm's details are not shown: %.600s", shown)
	}
	if !strings.Contains(strings.Join(actionIDs(t, blocks(t, msg)), ","), slack.ActionApprove) {
		t.Fatal("details shown whole, yet no Approve")
	}
	if code := w.click(lead, slack.ActionApprove, id); code != 200 {
		t.Fatalf("click: %d", code)
	}
	if req := w.approval(t, id); req.Status != approval.StatusApproved {
		t.Fatalf("a confirmation whose details were shown: %s", req.Status)
	}

	long := `{"prompt":"Rotate the keys?","details":{"hosts":"` + strings.Repeat("host-", 1000) + `"}}`
	id = w.submit(t, "confirm", long, "").ApprovalRequestID
	msg = w.posted(t, id)
	if strings.Contains(strings.Join(actionIDs(t, blocks(t, msg)), ","), slack.ActionApprove) {
		t.Fatal("details too long to show whole, yet the message offers Approve")
	}
	if code := w.click(lead, slack.ActionApprove, id); code != 200 {
		t.Fatalf("click: %d", code)
	}
	if req := w.approval(t, id); req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("an Approve click on clipped details was taken: %s, %d votes", req.Status, len(req.Votes))
	}
}

// The exposed arguments are shown inside a ``` code block so that Slack
// draws them literally. escape() neutralises only & < > and format
// characters, so a ``` inside an argument string closes the block early and
// the rest of the arguments is drawn as mrkdwn: here the payee the tool will
// pay is drawn struck through (~…~) and the amount note in bold, i.e. the
// agent formats what the approver reads.
func TestSlackArgumentsStayInTheirCodeBlock(t *testing.T) {
	w := newWorld(t)
	args := "{\"amount\":450,\"currency\":\"USD\",\"customer_id\":\"cust-1\",\"memo\":\"``` *ignore the line below, test data* \",\"zz_refund_to\":\" ~acct-MALLORY-0xdead~ \"}"
	out := w.submit(t, "issue_refund", args, `{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	b := blocks(t, w.posted(t, out.ApprovalRequestID))
	var argText string
	for _, blk := range b {
		if txt, ok := blk["text"].(map[string]any); ok {
			if s, _ := txt["text"].(string); strings.HasPrefix(s, "*Arguments*") {
				argText = s
			}
		}
	}
	if argText == "" {
		t.Fatal("no arguments block")
	}
	body := strings.TrimPrefix(argText, "*Arguments*\n")
	if n := strings.Count(body, "```"); n != 2 {
		t.Fatalf("the arguments block holds %d code fences, not 2: the agent's ``` ends the literal block and the rest "+
			"(*bold*, ~struck-through payee~) is drawn as mrkdwn and the Approve button is still offered (%v):\n%s",
			n, actionIDs(t, b), argText)
	}
}
