//go:build unix

package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// The policy says who may do what and who approves: a policy file every
// local user may write is a policy every local user writes. chiod refuses
// to start on one, and a SIGHUP refuses to load one (the running policy
// stays), as it refuses a data dir others may write.
func TestWorldWritablePolicyFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "policy.toml")
	raw, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(config, 0o646); err != nil {
		t.Fatal(err)
	}
	err = runBriefly(t, daemon.Options{ConfigPath: config, DataDir: filepath.Join(dir, "data")})
	if err == nil || !strings.Contains(err.Error(), "other users may write") {
		t.Fatalf("start on a world-writable policy file: %v", err)
	}

	f := newReloadFixture(t)
	if err := os.Chmod(f.config, 0o666); err != nil {
		t.Fatal(err)
	}
	f.hup(t, 1)
	if out := f.r.out.String(); !strings.Contains(out, "policy reload refused") || !strings.Contains(out, "other users may write") {
		t.Fatalf("reload of a world-writable policy file:\n%s", out)
	}
}
