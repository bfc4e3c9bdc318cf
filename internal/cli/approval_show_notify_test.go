package cli_test

import (
	"context"
	"strings"
	"testing"
)

// A request no channel could deliver waits for an approver who was never
// told. `chio approval show` printed notify_errors only in its JSON
// output; the table, what an operator reads first, did not say so.
func TestApprovalShowSaysWhichChannelsFailed(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	if err := w.k.RecordNotifyFailure(context.Background(), out.ApprovalRequestID, "email", "dial tcp 10.0.0.5:587: connection refused\x1b[2J"); err != nil {
		t.Fatal(err)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 || !strings.Contains(so, "NOT DELIVERED") || !strings.Contains(so, "connection refused") {
		t.Fatalf("approval show (exit %d) does not say the email failed:\n%s\n%s", code, so, se)
	}
	if strings.Contains(so, "\x1b") {
		t.Fatalf("a channel's error text reached the terminal unescaped:\n%q", so)
	}
}
