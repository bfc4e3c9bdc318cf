package cli_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

// An empty time range (--since not before --until) and an --until at the
// epoch are an auditor's typo, refused whatever the log holds: they were
// left to chiod, whose 400 exited 1, the code of a receipt or log that
// does not verify, so a script read the typo as a forgery. Like every
// other malformed filter (checkValues), they are usage errors, exit 2.
func TestReceiptEmptyTimeRangeIsAUsageError(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{28}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	for _, args := range [][]string{
		{"--since", "2026-01-02T00:00:00Z", "--until", "2026-01-01T00:00:00Z"},
		{"--since", "2026-01-01T00:00:00Z", "--until", "2026-01-01T01:00:00+01:00"},
		{"--since", "1h", "--until", "2h"},
		{"--until", "1970-01-01T00:00:00Z"},
	} {
		for _, cmd := range []string{"list", "stats"} {
			argv := append([]string{"receipt", cmd}, args...)
			stdout, stderr, code := chioVia(tw.URL, argv...)
			if code != cli.ExitUsage || !strings.Contains(stderr, "until") {
				t.Errorf("chio %s: exit %d, want %d naming until\n%s%s", strings.Join(argv, " "), code, cli.ExitUsage, stdout, stderr)
			}
		}
	}
}
