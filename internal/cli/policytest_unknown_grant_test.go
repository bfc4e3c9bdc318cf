package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A case whose grants name a grant the policy does not have (a typo in
// the cases file) is an error of the case, never the call "rejected":
// chiod decides such a call (a capability-scope deny, with a receipt), it
// does not refuse it before deciding. `chio policy test` used to count
// the unknown grant as the kernel's refusal, so a case expecting
// "rejected" passed while chiod denied the call.
func TestPolicyTestUnknownGrantIsNotRejected(t *testing.T) {
	// The capability was issued while the policy had grant api-al; the
	// policy in force no longer has it (a reload, or the case's typo).
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: anyToolPolicy + "\n[[grants]]\nid = \"api-al\"\nserver = \"api\"\ntool = \"*\"\n",
		Server: "api", Grants: []string{"api-al"}})
	p, err := policy.Parse([]byte(anyToolPolicy), "chio.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.ApplyPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	out, err := w.Kernel.Submit(context.Background(), w.Call(t, "lookup", "{}", ""))
	if err != nil || out.Status != kernel.StatusDenied {
		t.Fatalf("premise: chiod decides the call (a deny with a receipt); got %+v, %v", out, err)
	}
	dir := t.TempDir()
	pf, cf := filepath.Join(dir, "chio.toml"), filepath.Join(dir, "chio.cases.toml")
	if err := os.WriteFile(pf, []byte(anyToolPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := `
[[cases]]
name = "a typo in grants"
server = "api"
tool = "lookup"
grants = ["api-al"]
expect = "rejected"
`
	if err := os.WriteFile(cf, []byte(cases), 0o600); err != nil {
		t.Fatal(err)
	}
	so, se, code := chio(nil, "policy", "test", cf, "--policy", pf)
	if code == cli.ExitOK || !strings.Contains(so+se, `grant "api-al" is not in`) {
		t.Fatalf("chio policy test passed a case whose grant the policy lacks as \"rejected\" (chiod denies the call: %s by %s): exit %d\n%s%s",
			out.Status, out.Guard, code, so, se)
	}
}
