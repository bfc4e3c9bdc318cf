package slack_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/policy"
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

// policyWorld is newWorld with another policy text (same %[1..3]s).
func policyWorld(t *testing.T, policyText string, grants ...string) *world {
	t.Helper()
	w := &world{dataDir: t.TempDir(), clk: clock.NewFake(time.Now())}
	w.lead, _ = keys.Generate(nil)
	w.cfo, _ = keys.Generate(nil)
	w.agent, _ = keys.Generate(nil)
	var srv interface{ GetAPIURL() string }
	m, s := newMock(t)
	w.mock, srv = m, s
	p, err := policy.Parse([]byte(fmt.Sprintf(policyText, w.lead.Public(), w.cfo.Public(), srv.GetAPIURL())), "confirm.toml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slack.InstallCustodialKey(w.dataDir, w.lead); err != nil {
		t.Fatal(err)
	}
	w.ch, err = slack.New(*p.Channels.Slack, slack.Options{PublicURL: p.Kernel.PublicURL, DataDir: w.dataDir, Policy: p, Clock: w.clk, Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{w.ch},
		Backoff: channels.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	w.tw = testkit.NewWorld(t, testkit.Options{Policy: p, DataDir: w.dataDir, Clock: w.clk, Notifier: hub,
		Agent: testkit.Key(w.agent), Grants: grants, RequestPrefix: "req-confirm-"})
	w.k, w.store, w.capRaw = w.tw.Kernel, w.tw.Store, w.tw.CapRaw
	w.handler = w.ch.InteractionsHandler(w.k)
	t.Cleanup(func() { hub.Close(); w.ch.Close() })
	return w
}

// A confirm request binds its details (they are in the arguments, hence in
// the parameter hash the custodial token signs), and the agent acts on what
// was confirmed. Slack used to draw arguments for tool calls only, and to
// offer Approve all the same: a click confirmed details nobody was shown.
// Now the details are shown, and details too long to show whole leave the
// message without Approve (a click is refused).
func TestSlackConfirmShowsTheDetailsItApproves(t *testing.T) {
	w := policyWorld(t, custodialConfirmPolicy, "confirm")
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
