package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// freezePolicy: every capability also holds "freeze", an operator's
// emergency switch that covers nothing until a reload widens its tool
// pattern (to "*"): then, being first, it judges every call and denies it.
const freezePolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "issue_refund"
[[servers.tools]]
name = "noop"

[[grants]]
id = "freeze"
server = "pay"
tool = "%s"
[grants.constraints]
deny_when = "true"

[[grants]]
id = "refunds"
server = "pay"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`

// A call parked under one grant resumes only if, under the policy in
// force, that grant still judges it. Before, the resume re-matched only
// the grant it was parked under: after a reload that made an earlier grant
// of the capability cover the call (the freeze switch thrown), new calls
// were denied while an approval still ran the parked one.
func TestResumeIsJudgedByTheGrantThePolicyNowPicks(t *testing.T) {
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(freezePolicy, "noop", approver.Public()), Dispatcher: disp,
		Server: "pay", Grants: []string{"freeze", "refunds"}})
	args := `{"customer_id":"c","amount":450}`
	parked := w.Submit(t, "issue_refund", args, "")
	if parked.Status != kernel.StatusPendingApproval {
		t.Fatalf("before the freeze: %s, want pending", parked.Status)
	}

	frozen, err := policy.Parse([]byte(fmt.Sprintf(freezePolicy, "*", approver.Public())), "frozen.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.ApplyPolicy(context.Background(), frozen); err != nil {
		t.Fatal(err)
	}
	if out := w.Submit(t, "issue_refund", args, ""); out.Status != kernel.StatusDenied || out.Guard != kernel.GuardDenyWhen {
		t.Fatalf("a new call after the freeze: %s by %q, want denied by %s", out.Status, out.Guard, kernel.GuardDenyWhen)
	}

	res, err := w.Kernel.Respond(context.Background(), parked.ApprovalRequestID, w.Token(t, parked.ApprovalRequestID, approver, "approved", nil), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if n := disp.count(parked.RequestID); n != 0 {
		t.Fatalf("the parked refund ran (%d dispatches) after the freeze", n)
	}
	if res.Call == nil || res.Call.Status != kernel.StatusDenied || res.Call.Guard != kernel.GuardScope || !strings.Contains(res.Call.Reason, "grant freeze judges") {
		t.Fatalf("approved after the freeze: %+v, want denied by %s naming grant freeze", res.Call, kernel.GuardScope)
	}
}
