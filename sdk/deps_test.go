package chio

import (
	"os/exec"
	"strings"
	"testing"
)

// The SDK is linked into agents: it must not drag in the server, its store
// drivers or metrics, nor the CLI (see doc.go).
func TestSDKImportsNoServerOrCLI(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/chiokernel/chio/sdk").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"github.com/chiokernel/chio/internal/httpapi", "github.com/chiokernel/chio/internal/cli",
		"github.com/chiokernel/chio/internal/daemon", "github.com/chiokernel/chio/internal/store",
		"github.com/chiokernel/chio/internal/dispatch", "github.com/chiokernel/chio/channels",
		"go.etcd.io/bbolt", "github.com/prometheus/client_golang"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("sdk depends on %s", dep)
			}
		}
	}
}
