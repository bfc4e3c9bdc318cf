package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack/slacktest"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/policy"
)

// A request's message was deleted (by a workspace admin, or a retention
// policy shorter than the request's life) while the request was pending.
// Its escalation's chat.update was answered message_not_found, a
// permanent failure: the tier the request escalated to was never told in
// Slack, nor was its end. A message that is gone is posted again.
func TestDeletedMessageIsPostedAgainOnItsNextState(t *testing.T) {
	var mu sync.Mutex
	var posts []url.Values
	srv := slacktest.NewTestServer(func(c slacktest.Customize) {
		c.Handle("/chat.postMessage", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			v, _ := url.ParseQuery(string(b))
			mu.Lock()
			posts = append(posts, v)
			ts := fmt.Sprintf("1700000000.%06d", len(posts))
			mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": "C0APPROVALS", "ts": ts})
		})
		c.Handle("/chat.update", func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "message_not_found"})
		})
	})
	srv.Start()
	t.Cleanup(srv.Stop)
	ch, err := slack.New(policy.Slack{BotTokenEnv: botEnv, SigningSecretEnv: secretEnv, Channel: "#approvals", APIURL: srv.GetAPIURL()},
		slack.Options{PublicURL: publicURL, DataDir: t.TempDir(), Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })

	req := &approval.Request{ApprovalID: "ar-0123456789abcdef", Kind: approval.KindToolCall, Status: approval.StatusPending,
		Quorum: 1, Summary: "refund order 8834", ToolServer: "demo", ToolName: "issue_refund", ExpiresAt: time.Now().Add(time.Hour).Unix()}
	if err := ch.Deliver(context.Background(), "approval.requested", req); err != nil {
		t.Fatal(err)
	}
	// The message is deleted; the request escalates.
	esc := *req
	esc.Tier = 1
	if err := ch.Deliver(context.Background(), "approval.escalated", &esc); err != nil {
		t.Fatalf("the escalation of a request whose message was deleted is never shown in Slack: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 2 || !strings.Contains(posts[1].Get("blocks"), "escalated to tier 2") {
		t.Fatalf("want the request posted again at tier 2; posts: %v", posts)
	}
}
