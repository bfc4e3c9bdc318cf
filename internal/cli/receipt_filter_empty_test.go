package cli_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A filter given an empty value was dropped as if not given: `receipt
// list --tool "$TOOL"` with TOOL unset listed the receipts of every tool,
// and `receipt stats --decision "$D"` counted every decision, each with
// exit 0, the filter the auditor wrote silently not applied.
func TestReceiptFilterGivenEmptyIsRefused(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{26}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	out := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", `{"x":1}`, ""))
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("the call: %+v", out)
	}
	for _, cmd := range []string{"list", "stats"} {
		for _, flag := range []string{"--decision", "--guard", "--server", "--tool", "--subject", "--request-id", "--since", "--until"} {
			for _, form := range [][]string{{flag, ""}, {flag + "="}} {
				args := append([]string{"receipt", cmd}, form...)
				stdout, stderr, code := chioVia(tw.URL, args...)
				if code != cli.ExitUsage || !strings.Contains(stderr, flag) {
					t.Errorf("chio %s: exit %d, want %d naming %s\n%s%s", strings.Join(args, " "), code, cli.ExitUsage, flag, stdout, stderr)
				}
			}
		}
	}
	// Not given at all, they filter nothing.
	if stdout, stderr, code := chioVia(tw.URL, "receipt", "list", "--output", "jsonl"); code != 0 || !strings.Contains(stdout, out.ReceiptID) {
		t.Fatalf("receipt list: exit %d\n%s%s", code, stdout, stderr)
	}
}
