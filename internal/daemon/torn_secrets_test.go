//go:build unix

package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/internal/keys"
)

// chiod created kernel.pem, admin.token and read.token in place (O_EXCL)
// and wrote them after, as email-link.key was: a crash between the two, or
// before the write reached the disk, leaves the file empty, and every later
// start was refused until someone deleted it. An empty file holds no
// secret (nothing was served or signed before it was synced), so it is
// replaced by a new one, written whole before it takes the name, and the
// next start keeps it.
func TestEmptySecretFilesLeftByACrashAreReplaced(t *testing.T) {
	for _, file := range []string{daemon.KeyFile, daemon.AdminTokenFile, daemon.ReadTokenFile} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, file)
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
				t.Fatalf("chiod cannot start after a crash left %s empty: %v", file, err)
			}
			first, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if file == daemon.KeyFile {
				if _, err := keys.ParsePKCS8PEM(first); err != nil {
					t.Fatalf("%s was not replaced by a key: %v", file, err)
				}
			} else if len(strings.TrimSpace(string(first))) < daemon.MinTokenLen {
				t.Fatalf("%s was not replaced by a token: %q", file, first)
			}
			if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
				t.Fatalf("second start: %v", err)
			}
			if again, _ := os.ReadFile(path); string(again) != string(first) {
				t.Fatalf("%s was replaced again at the second start", file)
			}
		})
	}
}

// An empty kernel.pem beside a chio.db is a lost key, not a first start:
// the store belongs to the key that made it, so no new key is made and
// the start is refused saying what is missing.
func TestEmptyKernelKeyBesideAStoreIsALostKey(t *testing.T) {
	dir := t.TempDir()
	if err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, daemon.KeyFile)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "restore that kernel.pem") {
		t.Fatalf("an empty kernel.pem beside chio.db: %v", err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatalf("a new key was written beside the store of another: %q", b)
	}
}
