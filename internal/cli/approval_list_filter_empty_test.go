package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A filter of `chio approval list` given an empty value was dropped as if
// not given: `chio approval list --tool "$TOOL"` with TOOL unset listed the
// pending requests of every tool, exit 0 — and a script approving what it
// lists would approve them all. It is refused, as receipt list's filters are.
func TestApprovalListFilterGivenEmptyIsRefused(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{27}, 32))
	agent := keys.FromSeed(bytes.Repeat([]byte{28}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Agent: testkit.Key(agent), Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	tc := &kernel.ToolCall{RequestID: "req-parked", Capability: tw.CapRaw, Server: "demo", Tool: "issue_refund",
		Arguments: json.RawMessage(`{"customer_id":"cust-1","amount":450,"currency":"USD"}`)}
	testkit.Sign(t, tc, agent, time.Now())
	out := tw.SubmitCall(t, tc)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("the refund: %+v", out)
	}
	for _, flag := range []string{"--subject", "--server", "--tool"} {
		for _, form := range [][]string{{flag, ""}, {flag + "="}} {
			args := append([]string{"approval", "list"}, form...)
			stdout, stderr, code := chioVia(tw.URL, args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, flag) || strings.Contains(stdout, out.ApprovalRequestID) {
				t.Errorf("chio %s: exit %d, want %d naming %s and listing nothing\n%s%s", strings.Join(args, " "), code, cli.ExitUsage, flag, stdout, stderr)
			}
		}
	}
	// Not given at all, they filter nothing.
	if stdout, stderr, code := chioVia(tw.URL, "approval", "list"); code != 0 || !strings.Contains(stdout, out.ApprovalRequestID) {
		t.Fatalf("approval list: exit %d\n%s%s", code, stdout, stderr)
	}
}
