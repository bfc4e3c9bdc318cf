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

// A policy file of mode 0644 in a directory every local user may write
// (not sticky) is a policy every local user writes: a rename needs only
// the directory, so anyone can put a file of their own in its place
// before the next start or SIGHUP. So is a file a symlink resolves to in
// such a directory, and a symlink kept in one (it can be replaced too).
func TestPolicyFileInWorldWritableDirIsRefused(t *testing.T) {
	raw, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil { // no umask
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string) string // returns the config path
	}{
		{"file in the dir", func(t *testing.T, root string) string {
			open(t, filepath.Join(root, "shared"))
			p := filepath.Join(root, "shared", "policy.toml")
			if err := os.WriteFile(p, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"symlink to a file in the dir", func(t *testing.T, root string) string {
			open(t, filepath.Join(root, "shared"))
			target := filepath.Join(root, "shared", "policy.toml")
			if err := os.WriteFile(target, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(root, "policy.toml")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
		{"symlink kept in the dir", func(t *testing.T, root string) string {
			target := filepath.Join(root, "policy.toml")
			if err := os.WriteFile(target, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			open(t, filepath.Join(root, "shared"))
			link := filepath.Join(root, "shared", "policy.toml")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			config := tc.setup(t, root)
			err := runBriefly(t, daemon.Options{ConfigPath: config, DataDir: filepath.Join(root, "data")})
			if err == nil || !strings.Contains(err.Error(), "other users may replace") {
				t.Fatalf("start on a policy file in a world-writable directory: %v", err)
			}
		})
	}
}
