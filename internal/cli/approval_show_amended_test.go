package cli_test

import (
	"strings"
	"testing"
)

// An approver who amends a call approves other arguments than the agent
// asked for, and the tool receives those. `chio approval show` of the
// request then printed the agent's ARGUMENTS (cust-1, 450) and "approved
// by Finance Lead: executed", with nothing saying the call that ran moved
// 200 to cust-2: whoever reads it afterwards believes the agent's call is
// what ran. Slack's message and the dashboard's history say so; the table
// must too, and show what the tool received.
func TestApprovalShowSaysTheArgumentsWereAmended(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	id := out.ApprovalRequestID
	if _, se, code := w.run(adminEnv(), "approval", "approve", id, "--key", w.key("lead"),
		"--amend", `{"customer_id":"cust-2","amount":200,"currency":"USD"}`, "--note", "partial"); code != 0 {
		t.Fatalf("approve --amend: exit %d: %s", code, se)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", id)
	if code != 0 {
		t.Fatalf("approval show: exit %d: %s", code, se)
	}
	if !strings.Contains(so, "cust-2") || !strings.Contains(so, `"amount":200`) || !strings.Contains(so, "amended") {
		t.Fatalf("approval show of a request approved with amended arguments shows only the agent's arguments, "+
			"not the ones the tool received:\n%s", so)
	}
}
