package slack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// An approver's note may be approval.MaxNoteLen (2,000) bytes, and the
// message listed every vote, note and all, in one votes block clipped at
// Slack's limit for it: a long note on the first vote pushed every later
// vote, and the outcome line, out of the message. The channel reading it
// saw one vote where there were three. Every vote must be listed, a long
// note cut with a visible marker that says where to read it whole, and
// each block within Slack's limits.
func TestSlackLongNotesKeepEveryVote(t *testing.T) {
	mock, srv := newMock(t)
	cfg := policy.Slack{BotTokenEnv: botEnv, SigningSecretEnv: secretEnv, Channel: "#approvals", APIURL: srv.GetAPIURL()}
	c, err := slack.New(cfg, slack.Options{PublicURL: publicURL, Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	id := "ar-00000000-0000-7000-8000-0000000000a1"
	key := func(b string) string { return "ed25519:" + strings.Repeat(b, 32) }
	long := strings.Repeat("<", approval.MaxNoteLen) // escaped as &lt;: 8,000 bytes
	r := &approval.Request{ApprovalID: id, Kind: approval.KindToolCall, Status: approval.StatusDenied, Quorum: 3, Summary: "s",
		SubjectID: key("ab"), ToolServer: "demo", ToolName: "echo", Votes: []approval.Vote{
			{Approver: key("cd"), DisplayName: "Finance Lead", Decision: approval.DecisionApproved, Channel: "dashboard", Note: long},
			{Approver: key("ce"), DisplayName: "Treasurer", Decision: approval.DecisionApproved, Channel: "api", Note: strings.Repeat("n", approval.MaxNoteLen)},
			{Approver: key("cf"), DisplayName: "CFO", Decision: approval.DecisionDenied, Channel: "slack", Note: "duplicate payment"},
		},
		Resolution: &approval.Resolution{Outcome: approval.StatusDenied, ReceiptID: "rc-long"},
	}
	asked := *r
	asked.Status, asked.Votes, asked.Resolution = approval.StatusPending, []approval.Vote{}, nil
	if err := c.Deliver(context.Background(), kernel.EventApprovalRequested, &asked); err != nil {
		t.Fatal(err)
	}
	if err := c.Deliver(context.Background(), kernel.EventApprovalResolved, r); err != nil {
		t.Fatal(err)
	}
	_, u, _ := mock.snapshot()
	if len(u) != 1 {
		t.Fatalf("updates: %d", len(u))
	}
	bs := blocks(t, u[0])
	if len(bs) > 50 {
		t.Fatalf("%d blocks: Slack takes 50", len(bs))
	}
	var votes string
	for _, b := range bs {
		if b["type"] != "context" {
			continue
		}
		for _, el := range b["elements"].([]any) {
			text := el.(map[string]any)["text"].(string)
			if len(text) > 3000 {
				t.Fatalf("a context text of %d characters: Slack takes 3,000", len(text))
			}
			votes += text + "\n"
		}
	}
	for _, want := range []string{"Finance Lead *approved* via dashboard", "Treasurer *approved* via api",
		"CFO *denied* via slack: duplicate payment", "*denied* · receipt `rc-long`"} {
		if !strings.Contains(votes, want) {
			t.Errorf("the message does not list %q: a long note before it pushed it out:\n%.600s…", want, votes)
		}
	}
	for _, cut := range []string{"Finance Lead", "Treasurer"} {
		at := strings.Index(votes, cut)
		if at < 0 {
			continue // reported above
		}
		line, _, _ := strings.Cut(votes[at:], "\n")
		if !strings.Contains(line, fmt.Sprintf(" more bytes, see chio approval show %s)", id)) || !strings.Contains(line, "(note cut: ") {
			t.Errorf("%s's long note is not marked as cut:\n%.300s…", cut, line)
		}
	}
}
