package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A limit of `chio approval batch create` given an empty value was taken
// for no limit: `--subject "$AGENT" --max-total "$CAP"` with both unset
// signed and stored a standing approval for any agent with no amount
// limit, exit 0 — wider than the approver wrote. It is refused, and
// nothing is signed or stored.
func TestBatchCreateRefusesAnEmptyLimit(t *testing.T) {
	w := newApprovalWorld(t)
	for _, flag := range []string{"--subject", "--max-amount-per-call", "--max-total", "--kernel-key"} {
		for _, form := range [][]string{{flag, ""}, {flag + "="}} {
			args := append([]string{"approval", "batch", "create", "--key", w.key("lead"), "--server", "demo", "--tool", "issue_*",
				"--max-calls", "2", "--for", "1h"}, form...)
			so, se, code := w.run(adminEnv(), args...)
			if code != cli.ExitUsage || !strings.Contains(se, flag) {
				t.Errorf("chio %s: exit %d, want %d naming %s\n%s%s", strings.Join(args, " "), code, cli.ExitUsage, flag, so, se)
			}
		}
	}
	if so, se, code := w.run(adminEnv(), "approval", "batch", "list", "--output", "json"); code != 0 || strings.Contains(so, "ba-") {
		t.Fatalf("a standing approval was stored: exit %d\n%s%s", code, so, se)
	}
}
