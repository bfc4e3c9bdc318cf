package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A newcomer who starts the quick start again on a fresh data dir keeps the
// old `export CHIO_ADMIN_TOKEN=$(cat chio-data/admin.token)` in their shell:
// chiod generated a new token, refuses the old one, and the error says to
// read the token again from chiod's data dir, not only "a valid bearer
// token … is required".
func TestWrongTokenSaysToReadItAgain(t *testing.T) {
	w := newApprovalWorld(t)
	for _, env := range []map[string]string{
		{"CHIO_ADMIN_TOKEN": "not-the-token-of-this-chiod-0123456789"},
		{"CHIO_READ_TOKEN": "not-the-token-of-this-chiod-0123456789"},
	} {
		_, se, code := w.run(env, "approval", "list")
		if code != cli.ExitError || !strings.Contains(se, "unauthorized (401)") || !strings.Contains(se, "not this chiod's") ||
			!strings.Contains(se, "admin.token") {
			t.Errorf("with a wrong token %v: exit %d\n%s", env, code, se)
		}
	}
}
