package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A cases file nested deeper than a policy may be is refused, with its
// line, before the TOML parser reads it: the parser recurses once per
// level, and a file of a few million "[" (within the 8 MiB limit) used to
// kill `chio policy test` with "fatal error: stack overflow" (a Go stack
// overflow is not recoverable). 10,000 levels show the missing gate
// without spending a gigabyte of stack.
func TestPolicyTestRefusesDeepNesting(t *testing.T) {
	const n = 10000
	f := writeCases(t, `
[[cases]]
name = "deep"
server = "demo"
tool = "echo"
expect = "rejected"
args = { a = `+strings.Repeat("[", n)+strings.Repeat("]", n)+` }
`)
	so, se, code := chio(nil, "policy", "test", f, "--policy", quickstartPolicy())
	if code != cli.ExitUsage || !strings.Contains(se, "chio.cases.toml:7: keys, tables or lists are nested more than") {
		t.Fatalf("a cases file nested %d deep was not refused before parsing: exit %d\n%s%s", n, code, so, se)
	}
}
