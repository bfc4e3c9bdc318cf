package slack_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/channels/slack"
)

// A message reference was written without fsync: the intent to post (the
// request's first file) renamed into place, then a crash before its bytes
// reached the disk, leaves an empty <approval_id>.json. Every delivery of
// the request then failed on reading it ("unexpected end of JSON input"):
// the request was never posted, nor any later state, for as long as it was
// pending. A reference that cannot be read is a post whose outcome is not
// known: the request is posted again, saying an earlier message may be in
// the channel.
func TestUnreadableMessageReferenceIsPostedAgain(t *testing.T) {
	w := newWorld(t)
	w.lost.Store(true) // chiod dies before the hub posts anything
	out := w.refund(t)
	id := out.ApprovalRequestID
	req := w.approval(t, id)

	dir := filepath.Join(w.dataDir, "slack", "messages")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	restarted, err := slack.New(*w.tw.Policy.Channels.Slack, slack.Options{PublicURL: publicURL, DataDir: w.dataDir,
		Policy: w.tw.Policy, Clock: w.clk, Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restarted.Close() })
	if err := restarted.Deliver(context.Background(), "approval.requested", req); err != nil {
		t.Fatalf("the request is never posted while its reference cannot be read: %v", err)
	}
	msg := w.posted(t, id)
	if !strings.Contains(msg.Get("blocks"), earlierNote) {
		t.Fatalf("posted again with no word that an earlier message may be in the channel: %s", msg.Get("blocks"))
	}
	// The reference now holds the new message: the next state updates it.
	b, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil || !strings.Contains(string(b), `"ts":"1700000000.`) {
		t.Fatalf("reference after the post: %s %v", b, err)
	}
}
