package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// The example policies are user-facing: every one must validate, and every
// approver in them must have its demo key in examples/keys.
func TestExamplePoliciesValidate(t *testing.T) {
	files, err := filepath.Glob("../examples/policies/*.toml")
	if err != nil || len(files) < 4 {
		t.Fatalf("example policies: %v %v", files, err)
	}
	demoKeys := map[string]string{} // public key → pem file
	pems, _ := filepath.Glob("../examples/keys/*.pem")
	for _, f := range pems {
		k, err := keys.LoadPrivateKey(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		demoKeys[k.Public().String()] = filepath.Base(f)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p, err := Load(f)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(p.Hash) != 64 {
				t.Fatalf("hash %q", p.Hash)
			}
			for _, g := range p.Grants {
				if g.Approval == nil {
					continue
				}
				for _, a := range g.Approval.Approvers {
					pem, ok := demoKeys[a.PublicKey.String()]
					if !ok {
						t.Errorf("grant %q approver %q: no demo key in examples/keys", g.ID, a.DisplayName)
						continue
					}
					// The file name says whose key it is.
					want := strings.ToLower(strings.ReplaceAll(a.DisplayName, " ", "-"))
					if !strings.HasPrefix(want, strings.TrimSuffix(pem, ".pem")) {
						t.Errorf("approver %q uses %s", a.DisplayName, pem)
					}
				}
			}
		})
	}
}

func TestDemoKeysAreMarkedAsDemo(t *testing.T) {
	readme, err := os.ReadFile("../examples/keys/README.md")
	if err != nil || !strings.Contains(string(readme), "DEMO KEYS") {
		t.Fatalf("examples/keys/README.md must say DEMO KEYS: %v", err)
	}
}
