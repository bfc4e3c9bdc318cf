package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// The docs' first command for an approver is `chio keygen --out
// ~/.chio/me.pem`, on a machine where ~/.chio does not exist yet: keygen
// creates the missing directory, private to its owner, and writes the key
// 0600. (It used to fail with "no such file or directory".)
func TestKeygenCreatesTheKeysDirectory(t *testing.T) {
	home := t.TempDir()
	key := filepath.Join(home, ".chio", "me.pem")
	so, se, code := chio(nil, "keygen", "--out", key)
	if code != cli.ExitOK || !strings.HasPrefix(so, "ed25519:") {
		t.Fatalf("keygen --out %s: exit %d\nstdout %s\nstderr %s", key, code, so, se)
	}
	for path, mode := range map[string]os.FileMode{filepath.Dir(key): 0o700, key: 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v; want mode %v", path, fi.Mode(), err, mode)
		}
	}
	// The key it printed is the one it wrote, and a second keygen never
	// overwrites it.
	if show, _, code := chio(nil, "keygen", "--show", key); code != cli.ExitOK || show != so {
		t.Fatalf("keygen --show: exit %d %q; keygen printed %q", code, show, so)
	}
	if _, se, code := chio(nil, "keygen", "--out", key); code == cli.ExitOK || !strings.Contains(se, "exists") {
		t.Fatalf("keygen over an existing key: exit %d %s", code, se)
	}
}

// chiod's printed first call and the README both run `chio keygen --out
// agent/agent.pem`; the second run says the key is already there and how
// to read it, not only "open agent/agent.pem: file exists".
func TestKeygenOverAnExistingKeySaysHowToUseIt(t *testing.T) {
	key := filepath.Join(t.TempDir(), "agent.pem")
	pub, _, _ := chio(nil, "keygen", "--out", key)
	_, se, code := chio(nil, "keygen", "--out", key)
	want := "chio keygen: " + key + " already exists; keygen never overwrites a key (its public key: chio keygen --show " + key + ")"
	if code != cli.ExitError || strings.TrimSpace(se) != want {
		t.Fatalf("exit %d, stderr %q; want exit 1 and %q", code, se, want)
	}
	if again, _, _ := chio(nil, "keygen", "--show", key); again != pub {
		t.Fatalf("the existing key changed: %q, was %q", again, pub)
	}
}
