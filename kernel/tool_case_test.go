package kernel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

const toolCasePolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "issue_refund"
category = "financial"
amount = "/amount"
currency = "/currency"

# The refund asks a person; everything else on this server may run.
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

[[grants]]
id = "pay-other"
server = "pay"
tool = "*"
`

// A tool name that differs from a declared tool only in letter case is not
// another tool to every tool server: one that matches names case-
// insensitively runs issue_refund for "Issue_Refund". The kernel matched it
// case-sensitively, found no declared tool, and let the catch-all grant
// allow it — the refund ran with no human asked. Such a call is refused
// (capability-scope) and names the declared spelling; a tool the policy
// does not declare in any spelling is judged as before.
func TestToolNamedLikeADeclaredToolInAnotherCaseIsRefused(t *testing.T) {
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(toolCasePolicy, approver.Public()), Dispatcher: disp,
		Server: "pay", Grants: []string{"refunds", "pay-other"}})
	args := `{"customer_id":"c","amount":45000,"currency":"USD"}`

	if out := w.Submit(t, "issue_refund", args, ""); out.Status != kernel.StatusPendingApproval {
		t.Fatalf("issue_refund: %s (%s), want pending", out.Status, out.Reason)
	}
	for _, name := range []string{"Issue_Refund", "ISSUE_REFUND", "issue_refunD"} {
		out := w.Submit(t, name, args, "")
		if n := disp.count(out.RequestID); n != 0 || out.Status != kernel.StatusDenied || out.Guard != kernel.GuardScope {
			t.Fatalf("%s: %s by %q (%s), %d dispatches; want denied by %s", name, out.Status, out.Guard, out.Reason, n, kernel.GuardScope)
		}
		if !strings.Contains(out.Reason, `"issue_refund"`) {
			t.Fatalf("%s: reason %q does not name the declared tool", name, out.Reason)
		}
	}
	if out := w.Submit(t, "get_balance", `{}`, ""); out.Status != kernel.StatusAllowed {
		t.Fatalf("get_balance (undeclared, no look-alike): %s by %q (%s), want allowed", out.Status, out.Guard, out.Reason)
	}
}
