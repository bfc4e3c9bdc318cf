package cli_test

import (
	"strings"
	"testing"
)

// TestWatchShowsTheAmountTheCallMoves: the prompt's amount line is the
// amount the kernel derived from the arguments, as the dashboard, Slack and
// email show it, not the agent's max_amount. It printed the max_amount as
// the amount: "amount:   100000 USD" for a refund that moves 450 USD, and,
// for a tool that declares no amount, the agent's unchecked word with
// nothing saying so. `chio approval show` has the same AMOUNT row.
func TestWatchShowsTheAmountTheCallMoves(t *testing.T) {
	w := newApprovalWorld(t)
	refund := w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":450,"currency":"USD"}`,
		`{"purpose":"order 8834","max_amount":{"units":100000,"currency":"USD"}}`)
	so, se, _ := w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	if !strings.Contains(so, refund.ApprovalRequestID) || !strings.Contains(so, "amount:   450 USD\n") || strings.Contains(so, "amount:   100000") {
		t.Fatalf("the prompt does not show the 450 USD the refund moves:\n%s\n%s", so, se)
	}
	if so, _, _ := w.run(adminEnv(), "approval", "show", refund.ApprovalRequestID); !strings.Contains(so, "AMOUNT          450 USD\n") {
		t.Fatalf("approval show does not show the 450 USD the refund moves:\n%s", so)
	}

	w = newApprovalWorld(t)
	del := w.submit(t, "delete_file", `{"path":"/srv/data"}`, `{"purpose":"clean up","max_amount":{"units":1,"currency":"USD"}}`)
	so, se, _ = w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	if !strings.Contains(so, del.ApprovalRequestID) || !strings.Contains(so, "amount:   up to 1 USD (declared by the agent)\n") {
		t.Fatalf("the agent's max_amount is not marked as its word:\n%s\n%s", so, se)
	}
	if so, _, _ := w.run(adminEnv(), "approval", "show", del.ApprovalRequestID); !strings.Contains(so, "AMOUNT          up to 1 USD (declared by the agent)\n") {
		t.Fatalf("approval show does not mark the agent's max_amount as its word:\n%s", so)
	}
}
