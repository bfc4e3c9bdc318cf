package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A --since or --until finer than a millisecond (receipts are stamped in
// whole ms) is a usage error, exit 2, before chiod is asked: cut to its
// millisecond, --since took in a receipt from before the asked window.
func TestReceiptBoundFinerThanAMillisecondIsAUsageError(t *testing.T) {
	for _, cmd := range []string{"list", "stats"} {
		for _, flag := range []string{"--since", "--until"} {
			args := []string{"receipt", cmd, flag, "2026-01-02T12:00:00.0005Z"}
			stdout, stderr, code := chioVia("http://127.0.0.1:1", args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, "millisecond") {
				t.Errorf("chio %s: exit %d, want %d saying millisecond\n%s%s", strings.Join(args, " "), code, cli.ExitUsage, stdout, stderr)
			}
		}
	}
}
