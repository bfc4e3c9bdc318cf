package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A newcomer who opens a second shell and forgets the README's
// `export CHIO_ADMIN_TOKEN=…` gets chiod's 401. The error says that no
// token was sent and where chiod put its tokens, instead of only "a valid
// bearer token or approver session is required".
func TestMissingTokenIsNamed(t *testing.T) {
	w := newApprovalWorld(t)
	for _, args := range [][]string{
		{"approval", "list"},
		{"receipt", "list"},
		{"capability", "issue", "--subject", w.agent.Public().String(), "--grant", "echo", "--out", w.dir + "/a.cap"},
	} {
		_, se, code := w.run(map[string]string{}, args...)
		if code != cli.ExitError || !strings.Contains(se, "unauthorized (401)") ||
			!strings.Contains(se, "no token was sent: set CHIO_ADMIN_TOKEN") || !strings.Contains(se, "admin.token") {
			t.Errorf("%q without a token: exit %d\n%s", args, code, se)
		}
	}
	// A token that was sent and refused is not told to set one.
	_, se, code := w.run(map[string]string{"CHIO_ADMIN_TOKEN": "not-the-token-of-this-chiod-0123456789"}, "approval", "list")
	if code != cli.ExitError || !strings.Contains(se, "unauthorized (401)") || strings.Contains(se, "no token was sent") {
		t.Errorf("with a wrong token: exit %d\n%s", code, se)
	}
}
