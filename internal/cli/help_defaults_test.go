package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A duration flag without a default is not "(default 0s)": `chio help mcp
// serve` said "(default: chiod's, 20s; max 10m) (default 0s)", and `chio
// help approval batch create` called the required --for "(default 0s)".
func TestHelpShowsNoZeroDurationDefault(t *testing.T) {
	for _, cmd := range [][]string{{"mcp", "serve"}, {"approval", "batch", "create"}} {
		so, se, code := chio(nil, append([]string{"help"}, cmd...)...)
		if code != cli.ExitOK || !strings.Contains(so, "flags:") || strings.Contains(so, "(default 0s)") {
			t.Errorf("chio help %s: exit %d\n%s%s", strings.Join(cmd, " "), code, so, se)
		}
	}
}
