package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
)

// An operator whose shell holds only CHIO_READ_TOKEN (the right one)
// runs an admin command. chiod refused it 401 saying "a valid bearer
// token or approver session is required", though the token was valid
// and no session could do it either, and the CLI added "the token sent
// is not this chiod's: read … again": advice that sends the operator to
// re-read a token that is fine. The answer must say that the command
// needs the admin token, and not that the token sent was wrong.
func TestReaderTokenOnAnAdminCommandIsToldItNeedsTheAdminToken(t *testing.T) {
	const reader = "reader-token-reader-token-0123456789"
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: echoOnlyPolicy, Serve: true, ReadToken: reader})
	env := map[string]string{"CHIO_URL": w.URL, "CHIO_READ_TOKEN": reader}
	for _, args := range [][]string{
		{"capability", "issue", "--subject", w.Agent.Public().String(), "--grant", "echo"},
		{"capability", "revoke", "cap-1"},
		{"approval", "cancel", "ar-1", "--reason", "wrong payee"},
	} {
		var so, se bytes.Buffer
		code := cli.Main(args, &cli.Env{Stdin: strings.NewReader(""), Stdout: &so, Stderr: &se,
			Getenv: func(k string) string { return env[k] }})
		msg := se.String()
		if code == cli.ExitOK {
			t.Fatalf("%q with the reader token succeeded: %s", args, so.String())
		}
		if strings.Contains(msg, "not this chiod's") || strings.Contains(msg, "approver session") || !strings.Contains(msg, "admin token") {
			t.Errorf("%q with this chiod's reader token: exit %d, want an answer that says the admin token is needed, got:\n%s", args, code, msg)
		}
	}
}

const echoOnlyPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "echo"
[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`
