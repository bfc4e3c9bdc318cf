package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A standing approval's not_before and not_after are whole seconds, as an
// approval token's times are: `chio approval batch create --for 500ms`
// signed one whose not_after can equal its not_before, which chiod
// refuses ("batch approval window is invalid or over"), or one lasting a
// fraction of a second. As `chio approval approve --ttl 500ms` is (3cded89,
// 3742591), a window under a second is a usage error, before anything is
// signed or stored.
func TestBatchCreateRefusesAWindowUnderASecond(t *testing.T) {
	w := newApprovalWorld(t)
	for _, window := range []string{"500ms", "1ns", "999ms"} {
		args := []string{"approval", "batch", "create", "--key", w.key("lead"), "--server", "demo", "--tool", "issue_*",
			"--max-calls", "2", "--for", window}
		so, se, code := w.run(adminEnv(), args...)
		if code != cli.ExitUsage || !strings.Contains(se, "--for") {
			t.Errorf("chio %s: exit %d, want %d naming --for\n%s%s", strings.Join(args, " "), code, cli.ExitUsage, so, se)
		}
	}
	if so, se, code := w.run(adminEnv(), "approval", "batch", "list", "--output", "json"); code != 0 || strings.Contains(so, "ba-") {
		t.Fatalf("a standing approval was stored: exit %d\n%s%s", code, so, se)
	}
}
