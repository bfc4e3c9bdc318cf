package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chiod runs one guard explain cannot: every call to an mcp server has its
// arguments checked against the inputSchema its upstream lists for the
// tool, and a tool the upstream does not list (or has not listed yet) is
// denied (guard mcp-input-schema, internal/dispatch/mcp). The file alone
// knows neither, so an explained "allow" of a call to an mcp server holds
// only if the upstream offers the tool and the arguments match its schema:
// explain must say so among what it assumes, as it does for revocation and
// standing approvals, rather than print an unconditional allow for a call
// chiod would deny.
func TestPolicyExplainOfAnMCPCallSaysWhatItCannotCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "chio.toml")
	const doc = `
[[servers]]
id = "files"
transport = "mcp"
command = ["mcp-files"]

[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "files"
server = "files"
tool = "*"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	assumes := func(server, tool string) []string {
		so, se, code := chio(nil, "policy", "explain", file, "--output", "json", "--server", server, "--tool", tool, "--args", `{"path":"notes.txt"}`)
		var x struct {
			Outcome struct{ Verdict string } `json:"outcome"`
			Assumes []string                 `json:"assumes"`
		}
		if code != cli.ExitOK || json.Unmarshal([]byte(so), &x) != nil || x.Outcome.Verdict != "allow" {
			t.Fatalf("explain %s/%s: exit %d\n%s\n%s", server, tool, code, so, se)
		}
		return x.Assumes
	}
	mentions := func(lines []string) bool {
		for _, l := range lines {
			if strings.Contains(l, "mcp-input-schema") && strings.Contains(l, "inputSchema") {
				return true
			}
		}
		return false
	}
	if a := assumes("files", "delete_everything"); !mentions(a) {
		t.Fatalf("a call to mcp server files is explained as allowed assuming only %q; chiod denies it (mcp-input-schema) "+
			"unless the upstream offers the tool and the arguments match its inputSchema, which explain cannot see", a)
	}
	if a := assumes("demo", "echo"); mentions(a) {
		t.Fatalf("a builtin call assumes %q: no upstream schema applies to it", a)
	}
}
