//go:build unix

package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// financeLead is the quickstart's Finance Lead approver key
// (examples/keys/finance-lead.pem).
const financeLead = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"

// The kernel key signs capabilities and receipts, and the kernel's own
// advisory vote; a vote signed with it by anyone else is refused. A policy
// naming it as an approver names someone who can never vote (a quorum
// needing them is never met), and the holder of kernel.pem, who can mint
// any agent a capability, as the approver of that agent's calls: chiod
// refuses such a policy at start, naming the key, as it refuses an
// authority key among the approvers.
func TestDaemonRefusesKernelKeyAsApprover(t *testing.T) {
	dir := t.TempDir()
	copyInto(t, filepath.Join("..", "..", "examples", "keys", "finance-lead.pem"), filepath.Join(dir, daemon.KeyFile))
	err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir})
	if err == nil || !strings.HasPrefix(err.Error(), "refusing to start: ") || !strings.Contains(err.Error(), financeLead) ||
		!strings.Contains(err.Error(), "kernel key") {
		t.Fatalf("a policy naming the kernel key as an approver: %v, want a refusal naming the key", err)
	}
}

// A reload that names the kernel key as an approver is refused whole; the
// policy in force stays.
func TestReloadRefusesKernelKeyAsApprover(t *testing.T) {
	f := newReloadFixture(t)
	kernelKey := loadKey(t, filepath.Join(filepath.Dir(f.config), "data", daemon.KeyFile)).String()
	raw, _ := os.ReadFile(f.config)
	edited := strings.ReplaceAll(string(raw), financeLead, kernelKey)
	if edited == string(raw) {
		t.Fatal("the quickstart no longer names the Finance Lead's key; update this test")
	}
	if err := os.WriteFile(f.config, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	f.hup(t, 1)
	out := f.r.out.String()
	if !strings.Contains(out, "policy reload refused") || !strings.Contains(out, kernelKey) || strings.Contains(out, "policy reloaded") {
		t.Fatalf("reload naming the kernel key as an approver:\n%s", out)
	}
}
