package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// With a data dir, a resolved request's message reference lives on disk
// only (put drops it from memory), so the memory a long-running chiod
// holds is bounded by the requests still pending. A late delivery of an
// older event (the hub's two workers deliver one request's events out of
// order; a lost vote or ending is announced resolved again) reads the
// reference back from disk: that read cached it in memory for good, one
// entry per such request, never dropped.
func TestResolvedRefsReadBackAreNotKeptInMemory(t *testing.T) {
	getenv := func(k string) string {
		return map[string]string{"BOT": "xoxb-test-token", "SECRET": "8f742231b10e8888abcd99yyyzzz85a5"}[k]
	}
	c, err := New(policy.Slack{BotTokenEnv: "BOT", SigningSecretEnv: "SECRET", Channel: "#approvals", APIURL: "http://127.0.0.1:1/"},
		Options{PublicURL: "https://chio.example", DataDir: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 200
	for i := range n {
		id := fmt.Sprintf("ar-00000000-0000-7000-8000-%012d", i)
		req := func(status string) *approval.Request {
			r := &approval.Request{ApprovalID: id, Kind: approval.KindToolCall, Status: status, Quorum: 1, Summary: "s",
				SubjectID: "ed25519:" + strings.Repeat("ab", 32), ToolServer: "demo", ToolName: "echo"}
			if status != approval.StatusPending {
				r.Resolution = &approval.Resolution{Outcome: status, ReceiptID: "rc-x"}
			}
			return r
		}
		// Resolved first (its tombstone goes to disk), then the late
		// approval.requested, and the resolution once more.
		if err := c.Deliver(ctx, kernel.EventApprovalResolved, req(approval.StatusDenied)); err != nil {
			t.Fatal(err)
		}
		if err := c.Deliver(ctx, kernel.EventApprovalRequested, req(approval.StatusPending)); err != nil {
			t.Fatal(err)
		}
		if err := c.Deliver(ctx, kernel.EventApprovalResolved, req(approval.StatusDenied)); err != nil {
			t.Fatal(err)
		}
	}
	c.refs.mu.Lock()
	held := len(c.refs.mem)
	c.refs.mu.Unlock()
	if held != 0 {
		t.Fatalf("%d message references of resolved requests held in memory after %d requests resolved (want 0: they are on disk)", held, n)
	}
}
