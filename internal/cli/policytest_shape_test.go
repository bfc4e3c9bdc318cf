package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

const anyToolPolicy = `
[[servers]]
id = "api"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "lookup"

[[grants]]
id = "api-all"
server = "api"
tool = "*"
`

// `chio policy test` refuses ("rejected") exactly the calls chiod refuses
// before deciding: a name outside the naming rule (a space, an invisible
// character), an operation likewise, arguments over the kernel's size
// limit. It used to skip those checks and report "allow (grant api-all)"
// for calls chiod answers 400. Each case's verdict is first taken from a
// real kernel, so the file states the kernel's answer.
func TestPolicyTestRejectsWhatTheKernelRejects(t *testing.T) {
	big := `{"blob":"` + strings.Repeat("a", kernel.MaxArgumentsBytes) + `"}`
	type shapeCase struct{ name, tool, op, args string }
	cases := []shapeCase{
		{"a tool name with a space", "look up", "", "{}"},
		{"a tool name with a zero-width space", "lookup\u200b", "", "{}"},
		{"an operation with a bidi override", "lookup", "read\u202e", "{}"},
		{"arguments over the size limit", "lookup", "", big},
		{"arguments that are not an object", "lookup", "", "[1]"},
	}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: anyToolPolicy, Server: "api", Grants: []string{"api-all"}})
	for _, c := range cases {
		call := w.Call(t, c.tool, c.args, "")
		call.Operation = c.op
		if _, err := w.Kernel.Submit(context.Background(), call); !errors.Is(err, kernel.ErrBadCall) {
			t.Fatalf("premise: chiod refuses %q before deciding; got %v", c.name, err)
		}
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var file strings.Builder
	for _, c := range cases {
		file.WriteString("\n[[cases]]\nname = " + q(c.name) + "\nserver = \"api\"\ntool = " + q(c.tool) + "\n")
		if c.op != "" {
			file.WriteString("operation = " + q(c.op) + "\n")
		}
		file.WriteString("args = " + q(c.args) + "\nexpect = \"rejected\"\n")
	}
	// And a well-formed call through the same grant is still allowed.
	file.WriteString("\n[[cases]]\nname = \"a well-formed call\"\nserver = \"api\"\ntool = \"lookup\"\nexpect = \"allow\"\n")
	dir := t.TempDir()
	pf, cf := filepath.Join(dir, "chio.toml"), filepath.Join(dir, "chio.cases.toml")
	if err := os.WriteFile(pf, []byte(anyToolPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cf, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	so, se, code := chio(nil, "policy", "test", cf, "--policy", pf)
	if code != cli.ExitOK || strings.Contains(so, "FAIL") {
		t.Fatalf("chio policy test disagrees with chiod (which refuses these calls with 400):\n%s%s", so, se)
	}
}
