package policy

import (
	"os/exec"
	"strings"
	"testing"
)

// policy is data that everything else reads; it must never depend on what
// reads it, nor on a transport or store driver (see doc.go).
func TestPolicyImportsOnlyDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"net/http", "go.etcd.io/bbolt", "github.com/chiokernel/chio/kernel",
		"github.com/chiokernel/chio/approval", "github.com/chiokernel/chio/channels",
		"github.com/chiokernel/chio/receipt", "github.com/chiokernel/chio/internal/store"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("policy depends on %s", dep)
			}
		}
	}
}
