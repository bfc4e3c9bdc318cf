package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/kernel"
)

// An approval says what became of the call and exits non-zero unless it
// ran: 3 more votes needed, 4 not executed, 6 executed but the tool failed.
func TestApproveSaysWhatHappened(t *testing.T) {
	w := newApprovalWorld(t)

	t.Run("quorum: the first vote waits for the second", func(t *testing.T) {
		out := w.submit(t, "delete_file", `{"path":"/tmp/chio-cli-test-none"}`, "")
		so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"))
		if code != cli.ExitPending || !strings.Contains(so, "vote recorded for "+out.ApprovalRequestID+": 1 of 2 approvals; the call runs once 2 have approved") {
			t.Fatalf("first vote: %d %s %s", code, so, se)
		}
		so, _, code = w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("cfo"))
		if !strings.HasPrefix(so, "approved "+out.ApprovalRequestID+": executed") {
			t.Fatalf("second vote: %d %s", code, so)
		}
	})

	t.Run("the tool fails: exit 6 and the tool's error", func(t *testing.T) {
		// The demo refund tool refuses arguments without a customer.
		out := w.submit(t, "issue_refund", `{"amount":450,"currency":"USD"}`, `{"purpose":"p","max_amount":{"units":450,"currency":"USD"}}`)
		done := w.await(adminEnv(), out.ApprovalRequestID)
		so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"))
		if code != cli.ExitToolFailed || !strings.Contains(so, "approved "+out.ApprovalRequestID+": executed, but the tool failed: invalid arguments") {
			t.Fatalf("approve: %d %s %s", code, so, se)
		}
		so, se, code = waitAwait(t, done)
		if code != cli.ExitToolFailed || !strings.Contains(se, "allowed, but the tool failed: invalid arguments") {
			t.Fatalf("await: %d %s %s", code, so, se)
		}
	})

	t.Run("the capability is revoked during the wait: exit 4, denied by the capability guard", func(t *testing.T) {
		out := w.refund(t, 450)
		if err := w.k.Revoke(context.Background(), w.tw.Cap.ID); err != nil {
			t.Fatal(err)
		}
		so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--output", "json")
		var res kernel.RespondResult
		if code != cli.ExitDenied || json.Unmarshal([]byte(so), &res) != nil || res.Outcome != "approved" || res.Call == nil || res.Call.Guard != kernel.GuardCapability {
			t.Fatalf("approve: %d %s %s", code, so, se)
		}
	})
}

func TestApproveAfterRevocationTable(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	if err := w.k.Revoke(context.Background(), w.tw.Cap.ID); err != nil {
		t.Fatal(err)
	}
	so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"))
	if code != cli.ExitDenied || !strings.Contains(so, "approved "+out.ApprovalRequestID+": not executed: denied by the capability guard: capability revoked") {
		t.Fatalf("%d %s %s", code, so, se)
	}
}

// chio call exits 6 when the call was allowed and the tool failed.
func TestCallToolFailedExit6(t *testing.T) {
	w := newApprovalWorld(t)
	env := map[string]string{"CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	so, se, code := w.run(env, "call", "demo", "issue_refund", "--args", `{"amount":50,"currency":"USD"}`,
		"--intent", `{"purpose":"p","max_amount":{"units":50,"currency":"USD"}}`)
	if code != cli.ExitToolFailed || !strings.Contains(se, "allowed, but the tool failed: invalid arguments") {
		t.Fatalf("%d %s %s", code, so, se)
	}
	so, _, code = w.run(env, "call", "demo", "echo", "--args", `{"a":1}`)
	if code != cli.ExitOK || strings.TrimSpace(so) != `{"echo":{"a":1}}` {
		t.Fatalf("echo: %d %s", code, so)
	}
}

// chio await on a cancelled call exits 4 and prints the reason.
func TestAwaitCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"cancelled","request_id":"req-1","receipt_id":"rc-3","reason":"order withdrawn by the customer"}`))
	}))
	defer srv.Close()
	so, se, code := chio(map[string]string{"CHIO_URL": srv.URL, "CHIO_READ_TOKEN": "reader-token-0123456789abcdef01234"}, "await", "req-1")
	if code != cli.ExitDenied || strings.TrimSpace(so) != "cancelled: order withdrawn by the customer" {
		t.Fatalf("%d %q %q", code, so, se)
	}
}

// capFile writes the agent's capability to a file for chio call.
func (w *approvalWorld) capFile(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "agent.cap")
	if err := os.WriteFile(f, w.capRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
