package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// An approver who amends a call decides what the tool runs: the agent asked
// for a refund of 5 and the tool refunded 3. GET /v1/calls, `chio await`
// and the SDKs say so (approval.amended_arguments); an MCP agent reads only
// its result, so the result must say it too — in its text for a model and
// in _meta for a program — or the agent goes on believing its own
// arguments ran.
func TestAmendedCallResultTellsTheAgent(t *testing.T) {
	approver, _ := keys.Generate(nil)
	text := fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
channels = ["poll"]
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Approver"
`, approver.Public())
	w := newPolicyToolsWorld(t, text, []string{"refunds"})
	cs := w.bridge(t)

	r := callTool(t, cs, "demo__issue_refund", map[string]any{"customer_id": "cust-1", "amount": 5, "currency": "USD"})
	approvalID, _ := r.Meta[MetaApprovalID].(string)
	if !r.IsError || r.Meta[MetaStatus] != kernel.StatusPendingApproval || !strings.HasPrefix(approvalID, "ar-") {
		t.Fatalf("refund: %v %q", r.Meta, resultText(r))
	}
	amended := `{"amount":3,"currency":"USD","customer_id":"cust-1"}`
	tok := w.Token(t, approvalID, approver, approval.DecisionApproved, func(tok *approval.Token) {
		tok.AmendedArguments = json.RawMessage(amended)
	})
	if _, err := w.Kernel.Respond(context.Background(), approvalID, tok, "", ""); err != nil {
		t.Fatal(err)
	}
	r = callTool(t, cs, AwaitTool, map[string]any{"id": approvalID, "wait_seconds": 30})
	if r.IsError || !strings.Contains(resultText(r), `"status":"issued"`) {
		t.Fatalf("await refund: isError %v %q %v", r.IsError, resultText(r), r.Meta)
	}
	if !strings.Contains(resultText(r), "amended") || !strings.Contains(resultText(r), amended) {
		t.Errorf("the result of an amended call does not tell the model that an approver amended its arguments, nor to what: %q", resultText(r))
	}
	got, _ := json.Marshal(r.Meta["chio/amended_arguments"])
	if string(got) != amended {
		t.Errorf("_meta[chio/amended_arguments] = %s; want the arguments the tool ran with, %s", got, amended)
	}
}
