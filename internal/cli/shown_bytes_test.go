package cli_test

import (
	"strings"
	"testing"
)

// An approver reads the arguments as the tool receives them, in every
// terminal view: `chio approval show` (GET /approvals/{id}) and `chio
// approval watch` (the event stream). The server must not HTML-escape
// them on the way: "<" arriving as \u003c is the same JSON value, but the
// approver reads "cust-\u003c1\u003e" where the tool gets "cust-<1>".
// Invisible characters (a bidi override, a line separator) are still
// shown as escapes, whatever bytes carry them.
func TestApproverSeesArgumentsAsTheToolReceivesThem(t *testing.T) {
	w := newApprovalWorld(t)
	const args = "{\"amount\":450,\"currency\":\"USD\",\"customer_id\":\"cust-<1>&2\u202e\u2028\"}"
	shownArgs := `{"amount":450,"currency":"USD","customer_id":"cust-<1>&2\u202e\u2028"}`
	out := w.submit(t, "issue_refund", args, `{"purpose":"order <8834> & more","max_amount":{"units":450,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 || !strings.Contains(so, shownArgs) || !strings.Contains(so, "order <8834> & more") {
		t.Errorf("approval show (exit %d) does not show %s as the tool receives it:\n%s\n%s", code, shownArgs, so, se)
	}
	so, se, code = w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "arguments: "+shownArgs) {
		t.Errorf("approval watch (exit %d) does not show %s as the tool receives it:\n%s\n%s", code, shownArgs, so, se)
	}
}

// The JSON views (--output json / jsonl) are read by approvers and their
// scripts too: they hold the arguments' characters, not \u003c for "<",
// and still show invisible characters as escapes.
func TestApprovalShowJSONKeepsTheArgumentsCharacters(t *testing.T) {
	w := newApprovalWorld(t)
	const args = "{\"amount\":450,\"currency\":\"USD\",\"customer_id\":\"cust-<1>&2\u202e\"}"
	out := w.submit(t, "issue_refund", args, `{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	for _, o := range []struct{ format, want string }{
		{"json", `"customer_id": "cust-<1>&2\u202e"`},
		{"jsonl", `"customer_id":"cust-<1>&2\u202e"`},
	} {
		so, se, code := w.run(adminEnv(), "--output", o.format, "approval", "show", out.ApprovalRequestID)
		if code != 0 || !strings.Contains(so, o.want) {
			t.Errorf("approval show --output %s (exit %d) lacks %s:\n%s\n%s", o.format, code, o.want, so, se)
		}
	}
}
