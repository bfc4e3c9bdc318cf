package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// Every example policy ships with cases, and they pass: the same command a
// platform team runs in CI beside its chio.toml.
func TestExamplePolicyCases(t *testing.T) {
	policies, _ := filepath.Glob(filepath.Join("..", "..", "examples", "policies", "*.toml"))
	if len(policies) < 4 {
		t.Fatalf("example policies: %v", policies)
	}
	for _, p := range policies {
		t.Run(filepath.Base(p), func(t *testing.T) {
			cases := filepath.Join(filepath.Dir(p), "tests", filepath.Base(p))
			if _, err := os.Stat(cases); err != nil {
				t.Fatalf("%s has no cases (want %s)", p, cases)
			}
			so, se, code := chio(nil, "policy", "test", cases)
			if code != cli.ExitOK || !strings.Contains(so, ", 0 failed") || strings.Contains(so, "FAIL") {
				t.Fatalf("exit %d\n%s%s", code, so, se)
			}
		})
	}
}

func writeCases(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "chio.cases.toml")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// A failing case exits 1 and shows what was wanted, what the policy
// decided, and each difference.
func TestPolicyTestFailureDiff(t *testing.T) {
	f := writeCases(t, `
[[cases]]
name = "passwd must be denied"
server = "demo"
tool = "delete_file"
args = { path = "/tmp/ok" }
expect = "deny"
guard = "forbidden_paths"

[[cases]]
name = "wrong trigger"
server = "demo"
tool = "issue_refund"
args = '{"customer_id":"c","amount":450,"currency":"USD"}'
intent = { purpose = "p", max_amount = { units = 450, currency = "USD" } }
expect = "pending"
triggers = ["require_approval_always"]

[[cases]]
name = "wrong guard"
server = "demo"
tool = "issue_refund"
expect = "deny"
guard = "forbidden_paths"

[[cases]]
name = "passes"
server = "demo"
tool = "echo"
expect = "allow"
`)
	so, _, code := chio(nil, "policy", "test", f, "--policy", quickstartPolicy())
	for _, want := range []string{
		"FAIL  passwd must be denied  (demo/delete_file)\n      want: deny by forbidden_paths\n      got:  allow (grant files)\n      - outcome is allow, not deny",
		"FAIL  wrong trigger", "- triggered by [require_approval_above], not [require_approval_always]",
		"FAIL  wrong guard", "got:  deny by governed_intent_required", "- denied by governed_intent_required, not forbidden_paths",
		"4 cases, 3 failed",
	} {
		if !strings.Contains(so, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if code != cli.ExitError || strings.Contains(so, "passes") {
		t.Fatalf("exit %d\n%s", code, so)
	}
	// -v lists the cases that pass too.
	so, _, _ = chio(nil, "policy", "test", f, "--policy", quickstartPolicy(), "-v")
	if !strings.Contains(so, "ok    passes") {
		t.Fatalf("-v:\n%s", so)
	}
}

// A cases file that cannot be read as written is a usage error naming the
// case and the problem; nothing runs.
func TestPolicyTestBadCases(t *testing.T) {
	for name, c := range map[string]struct{ text, err string }{
		"unknown key":       {"policy = \"x\"\n[[cases]]\nserver = \"demo\"\ntool = \"echo\"\nexpect = \"allow\"\nexpct = \"deny\"\n", "unknown key cases.expct"},
		"bad expectation":   {"[[cases]]\nname = \"n\"\nserver = \"demo\"\ntool = \"echo\"\nexpect = \"maybe\"\n", "n: expect must be allow, deny, pending or rejected"},
		"guard with allow":  {"[[cases]]\nserver = \"demo\"\ntool = \"echo\"\nexpect = \"allow\"\nguard = \"x\"\n", "case 1: guard is for expect = \"deny\""},
		"no tool":           {"[[cases]]\nserver = \"demo\"\nexpect = \"allow\"\n", "server and tool are required"},
		"args not JSON":     {"[[cases]]\nserver = \"demo\"\ntool = \"echo\"\nargs = \"{nope\"\nexpect = \"allow\"\n", "args: not valid JSON"},
		"args a number":     {"[[cases]]\nserver = \"demo\"\ntool = \"echo\"\nargs = 3\nexpect = \"allow\"\n", "args: want a table or a JSON string"},
		"no cases":          {"policy = \"x.toml\"\n", "no [[cases]]"},
		"not TOML":          {"[[cases]\n", "chio.cases.toml"},
		"no policy to test": {"[[cases]]\nserver = \"demo\"\ntool = \"echo\"\nexpect = \"allow\"\n", "names no policy"},
	} {
		t.Run(name, func(t *testing.T) {
			so, se, code := chio(nil, "policy", "test", writeCases(t, c.text))
			if code != cli.ExitUsage || so != "" || !strings.Contains(se, c.err) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, so, se)
			}
		})
	}
	// The policy is found beside the cases file.
	dir := t.TempDir()
	data, _ := os.ReadFile(quickstartPolicy())
	os.WriteFile(filepath.Join(dir, "chio.toml"), data, 0o600)
	os.WriteFile(filepath.Join(dir, "chio.cases.toml"), []byte("policy = \"chio.toml\"\n[[cases]]\nserver = \"demo\"\ntool = \"echo\"\nexpect = \"allow\"\n"), 0o600)
	if so, se, code := chio(nil, "policy", "test", filepath.Join(dir, "chio.cases.toml")); code != 0 || !strings.Contains(so, "1 cases, 0 failed") {
		t.Fatalf("relative policy: %d %s %s", code, so, se)
	}
}
