//go:build unix

package daemon_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
)

// A second deployment started on a copy of another's chio.db, with its own
// kernel key, is refused, and the operator is told which keys and what to
// do. The copy that also takes kernel.pem is the same kernel, and starts.
func TestDaemonRefusesStoreOfAnotherKernelKey(t *testing.T) {
	prod, staging := t.TempDir(), t.TempDir()
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: prod}); err != nil {
		t.Fatal(err)
	}
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: staging}); err != nil {
		t.Fatal(err)
	}
	copyInto(t, filepath.Join(prod, "chio.db"), filepath.Join(staging, "chio.db"))
	err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: staging})
	prodKey := loadKey(t, filepath.Join(prod, "kernel.pem"))
	stagingKey := loadKey(t, filepath.Join(staging, "kernel.pem"))
	if err == nil || !errors.Is(err, boltstore.ErrKeyMismatch) || !strings.HasPrefix(err.Error(), "refusing to start: ") ||
		!strings.Contains(err.Error(), prodKey.String()) || !strings.Contains(err.Error(), stagingKey.String()) {
		t.Fatalf("a copied chio.db under another kernel key: %v", err)
	}
	copyInto(t, filepath.Join(prod, "kernel.pem"), filepath.Join(staging, "kernel.pem"))
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: staging}); err != nil {
		t.Fatalf("the copy with its kernel.pem: %v", err)
	}
}

// A data dir whose chio.db lost its kernel.pem (a volume restored without
// it, a mistaken rm) is refused before any key is made: the store belongs
// to the key that created it, and a fresh kernel.pem written beside it
// would only hide what is missing.
func TestDaemonRefusesStoreWhoseKernelKeyIsMissing(t *testing.T) {
	dir := t.TempDir()
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "kernel.pem")
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir})
	if err == nil || !strings.HasPrefix(err.Error(), "refusing to start: ") || !strings.Contains(err.Error(), keyPath) {
		t.Fatalf("chio.db without its kernel.pem: %v, want a refusal naming %s", err, keyPath)
	}
	if _, err := os.Stat(keyPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused start left a kernel.pem behind (%v): a new key must not be made for an existing store", err)
	}
}

func copyInto(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func loadKey(t *testing.T, path string) keys.PublicKey {
	t.Helper()
	k, err := keys.LoadPrivateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k.Public()
}
