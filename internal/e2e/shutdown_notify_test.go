//go:build unix

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// shutdownWebhookPolicy parks every refund for one approver, announced
// through the webhook at url only.
const shutdownWebhookPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[servers.tools]]
name = "issue_refund"
action = "charge"
category = "financial"
amount = "/amount"
currency = "/currency"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"

[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
governed_intent_required = true

[grants.approval]
timeout_seconds = 3600
timeout_action = "deny"
channels = ["webhook"]

[[grants.approval.approvers]]
public_key = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
display_name = "Finance Lead"

[channels.webhook]
url = "%URL%"
`

// TestWebhookCutByShutdownIsSentAfterRestart: chiod is stopped (SIGTERM)
// while the webhook announcing a parked call is still being delivered
// (the receiver has not answered). The request stays pending across the
// restart, so its approvers must still be told: the next start announces
// it again. A request marked "told" although its announcement was dropped
// at shutdown is never announced: nobody hears of it, and its deadline
// acts (with auto_approve_advisory: runs the call) with no human asked.
func TestWebhookCutByShutdownIsSentAfterRestart(t *testing.T) {
	var answer atomic.Bool // false: hang until chiod gives up; true: 200
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var d struct {
			Event    string `json:"event"`
			Approval struct {
				ApprovalID string `json:"approval_id"`
			} `json:"approval"`
		}
		_ = json.Unmarshal(b, &d)
		got <- d.Event + " " + d.Approval.ApprovalID
		if !answer.Load() {
			<-r.Context().Done() // mid-delivery when chiod stops
		}
	}))
	defer srv.Close()
	work := t.TempDir()
	cfg := filepath.Join(work, "chio.toml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(shutdownWebhookPolicy, "%URL%", srv.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(work, "data")
	d := startDaemon(t, cfg, data)
	a := newAgent(t, d, "refunds")
	code, out, err := postCall(t.Context(), http.DefaultClient, d.url, a.call(t, "req-shutdown-webhook", "demo", "issue_refund", approvalRefundArgs, approvalRefundIntent))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %d %+v %v", code, out, err)
	}
	want := "approval.requested " + out.ApprovalRequestID
	select {
	case g := <-got:
		if g != want {
			t.Fatalf("webhook got %q, want %q", g, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the webhook was never called")
	}
	// The delivery hangs: stop chiod now.
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("chiod did not stop:\n%s", d.log())
	}
	for len(got) > 0 {
		<-got
	}
	answer.Store(true)

	d2 := startDaemon(t, cfg, data)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case g := <-got:
			if g == want {
				return
			}
		case <-deadline:
			var req struct {
				Status       string   `json:"status"`
				NotifyErrors []string `json:"notify_errors"`
			}
			d2.do(t, "GET", "/approvals/"+out.ApprovalRequestID, nil, &req)
			t.Fatalf("after the restart, pending request %s (status %q, notify_errors %q) was never announced again: its approvers never hear of it",
				out.ApprovalRequestID, req.Status, req.NotifyErrors)
		}
	}
}
