package kernel_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The kernel decides; transports, store drivers and channel SDKs live
// outside it. This test fails the build if that boundary erodes.
func TestKernelImportsNoTransportOrDriver(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}",
		"github.com/chiokernel/chio/kernel", "github.com/chiokernel/chio/policy",
		"github.com/chiokernel/chio/receipt").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"net/http", "go.etcd.io/bbolt", "github.com/jackc/pgx", "github.com/slack-go/slack", "net/smtp",
		"github.com/chiokernel/chio/internal/httpapi", "github.com/chiokernel/chio/channels"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("kernel/policy/receipt depend on %s", dep)
			}
		}
	}
}
