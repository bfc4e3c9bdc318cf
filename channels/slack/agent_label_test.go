package slack_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// The message named the agent by the first 8 hex digits of its key alone
// (32 bits: another agent holding the same grant can find a key that
// starts the same), while the dashboard and `chio approval show` name it
// by the label of its signed capability. An approver in Slack could not
// tell which agent asks. The message must show the label, escaped.
func TestMessageNamesTheAgentByItsLabel(t *testing.T) {
	mock, srv := newMock(t)
	cfg := policy.Slack{BotTokenEnv: botEnv, SigningSecretEnv: secretEnv, Channel: "#approvals", APIURL: srv.GetAPIURL()}
	c, err := slack.New(cfg, slack.Options{PublicURL: publicURL, Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	key := "ed25519:" + strings.Repeat("ab", 32)
	r := &approval.Request{ApprovalID: "ar-00000000-0000-7000-8000-0000000000a1", Kind: approval.KindToolCall,
		Status: approval.StatusPending, Quorum: 1, Summary: "refund", SubjectID: key, SubjectPublicKey: key,
		SubjectLabel: "refund-bot <eu>", PolicyID: "refunds", ToolServer: "demo", ToolName: "issue_refund", Votes: []approval.Vote{}}
	if err := c.Deliver(context.Background(), kernel.EventApprovalRequested, r); err != nil {
		t.Fatal(err)
	}
	p, _, _ := mock.snapshot()
	if len(p) != 1 {
		t.Fatalf("posts: %v", p)
	}
	var agent string
	for _, f := range blocks(t, p[0])[1]["fields"].([]any) {
		if s := f.(map[string]any)["text"].(string); strings.HasPrefix(s, "*Agent*") {
			agent = s
		}
	}
	if !strings.Contains(agent, "refund-bot &lt;eu&gt;") || !strings.Contains(agent, "`ed25519:abababab…`") {
		t.Fatalf("the Agent field does not name the agent by its label and key: %q", agent)
	}
}
