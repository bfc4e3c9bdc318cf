package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chio call sends the arguments as given: a call whose arguments are
// within MaxArgumentsBytes (256 KiB) is not refused because the client
// re-encoded them larger. json.Marshal writes each '<' as \u003c (six
// bytes), and chiod counts the arguments as sent.
func TestCallSendsTheArgumentsAsGiven(t *testing.T) {
	w := newApprovalWorld(t)
	env := map[string]string{"CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	args := `{"html":"` + strings.Repeat("<b>", 25_000) + `"}` // 75 KB; 325 KB escaped
	so, se, code := w.run(env, "call", "demo", "echo", "--args", args)
	if want := `{"echo":` + args + `}`; code != cli.ExitOK || strings.TrimSpace(so) != want {
		t.Fatalf("exit %d, stderr %s, stdout (%d bytes) %.200s", code, se, len(so), so)
	}
}
