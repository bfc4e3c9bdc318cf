package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// README.md's exit codes: 2 is "usage: a command, argument or flag is
// wrong". A --decision chio cannot filter by, or an approval list --limit
// out of range, exited 1 on chiod's 400 — the code `receipt list` also
// uses for a receipt that does not verify, so an auditor's script read a
// typo as a forged log. They are usage errors, caught before chiod is asked.
func TestBadFilterValueIsAUsageError(t *testing.T) {
	w := newAuditWorld(t)
	for _, args := range [][]string{
		{"receipt", "list", "--decision", "denied"},
		{"receipt", "stats", "--decision", "denied"},
		{"approval", "list", "--limit", "0"},
		{"approval", "list", "--limit", "1001"},
		// A bound or metadata filter chiod cannot read was its 400 too.
		{"receipt", "list", "--since", "yesterday"},
		{"receipt", "list", "--until", "1d7d"},
		{"receipt", "stats", "--since", "-24h"},
		{"receipt", "list", "--meta", "=refund"},
		{"receipt", "stats", "--meta", "=refund"},
	} {
		so, se, code := w.chio(t, args...)
		if code != cli.ExitUsage || !strings.Contains(se, args[2]) {
			t.Errorf("chio %s: exit %d, want %d naming %s\n%s%s", strings.Join(args, " "), code, cli.ExitUsage, args[2], so, se)
		}
	}
	// The values chiod takes still work.
	for _, d := range []string{"allow", "deny", "cancelled", "incomplete"} {
		if so, se, code := w.chio(t, "receipt", "list", "--decision", d); code != 0 {
			t.Errorf("receipt list --decision %s: exit %d\n%s%s", d, code, so, se)
		}
	}
	for _, args := range [][]string{
		{"receipt", "list", "--since", "24h", "--until", "2099-01-01T00:00:00Z"},
		{"receipt", "stats", "--since", "7d", "--meta", "auto_approved=true"},
		{"receipt", "list", "--meta", "amount"},
	} {
		if so, se, code := w.chio(t, args...); code != 0 {
			t.Errorf("chio %s: exit %d\n%s%s", strings.Join(args, " "), code, so, se)
		}
	}
	if so, se, code := w.chio(t, "approval", "list", "--limit", "1000"); code != 0 {
		t.Errorf("approval list --limit 1000: exit %d\n%s%s", code, so, se)
	}
}
