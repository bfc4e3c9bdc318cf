package mcpgw

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// chio_await's wait_seconds is 0..600 (its input schema says so, and
// docs/mcp.md). A wait outside that range, or not a whole number of
// seconds, was silently capped (601 waited 600) or refused with a message
// that did not say why; GET /v1/calls/{id}?wait= refuses an out-of-range
// wait with the range. The agent must be told, before anything is read,
// that its wait is refused and what range is accepted.
func TestAwaitRefusesAWaitOutOfRange(t *testing.T) {
	approver, _ := keys.Generate(nil)
	w := newPolicyToolsWorld(t, fmt.Sprintf(alwaysApprovedRefunds, approver.Public()), []string{"refunds"})
	cs := w.bridge(t)
	r := callTool(t, cs, "demo__issue_refund", map[string]any{"customer_id": "cust-1", "amount": 5, "currency": "USD"})
	approvalID, _ := r.Meta[MetaApprovalID].(string)
	if r.Meta[MetaStatus] != kernel.StatusPendingApproval || approvalID == "" {
		t.Fatalf("refund: %v %q", r.Meta, resultText(r))
	}
	// Decided, so that a wait the gateway accepts answers at once.
	tok := w.Token(t, approvalID, approver, approval.DecisionApproved, nil)
	if _, err := w.Kernel.Respond(context.Background(), approvalID, tok, "", ""); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []any{601, 86400, 1e10, -1, 2.5, "30", true} {
		r := callTool(t, cs, AwaitTool, map[string]any{"id": approvalID, "wait_seconds": bad})
		if !r.IsError || r.Meta[MetaStatus] != StatusRefused || !strings.Contains(resultText(r), "wait_seconds must be a whole number of seconds from 0 to 600") {
			t.Errorf("wait_seconds %v: want a refusal naming the range 0 to 600; got isError %v %q %v", bad, r.IsError, resultText(r), r.Meta)
		}
	}
	for _, good := range []any{0, 600} {
		r := callTool(t, cs, AwaitTool, map[string]any{"id": approvalID, "wait_seconds": good})
		if r.IsError || !strings.Contains(resultText(r), `"status":"issued"`) {
			t.Errorf("wait_seconds %v: want the refund's result; got isError %v %q %v", good, r.IsError, resultText(r), r.Meta)
		}
	}
}
