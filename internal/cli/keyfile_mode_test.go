//go:build unix

package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A private key file others may read lets them sign as its holder: an
// approver's key approves, an agent's calls. chiod refuses such files
// (secretfile); the CLI, which must keep working with keys people copy
// around (the repository's demo keys check out 0644), says so on stderr
// each time it loads one, with the fix.
func TestCLIWarnsOfAKeyFileOthersMayRead(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "me.pem")
	if _, se, code := chio(nil, "keygen", "--out", key); code != cli.ExitOK {
		t.Fatalf("keygen: exit %d: %s", code, se)
	}
	capFile := filepath.Join(dir, "agent.cap")
	if err := os.WriteFile(capFile, []byte(`{"id":"cap-1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	commands := [][]string{
		{"keygen", "--show", key},
		{"--url", "http://127.0.0.1:1", "call", "demo", "echo", "--args", "{}", "--capability", capFile, "--key", key},
	}
	for _, args := range commands {
		if _, se, _ := chio(nil, args...); strings.Contains(se, "warning") {
			t.Fatalf("%q on a 0600 key warned: %s", args, se)
		}
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range commands {
		if _, se, _ := chio(nil, args...); !strings.Contains(se, "warning: key file "+key+" has mode 0644") || !strings.Contains(se, "chmod 600 "+key) {
			t.Fatalf("%q on a 0644 key: stderr %q", args, se)
		}
	}
}
