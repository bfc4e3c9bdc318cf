//go:build unix

package daemon_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// A symlink planted at the data dir's chiod.pid must refuse the start, and
// neither the file it points at nor a file at its dangling target may be
// written. chiod opened chiod.pid with O_CREATE and no O_NOFOLLOW, then
// truncated it and wrote its pid: through a link to any file the user
// running chiod may write (a config, another service's state), it
// truncated that file; through a dangling link it created one.
func TestPIDFileSymlinkIsRefused(t *testing.T) {
	for _, dangling := range []bool{false, true} {
		name := map[bool]string{false: "to a file", true: "dangling"}[dangling]
		t.Run(name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			victim := filepath.Join(elsewhere, "precious")
			if !dangling {
				if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(victim, filepath.Join(dir, daemon.PIDFile)); err != nil {
				t.Fatal(err)
			}
			err := runBriefly(t, daemon.Options{ConfigPath: quickstart(), DataDir: dir})
			b, rerr := os.ReadFile(victim)
			switch {
			case dangling && !errors.Is(rerr, os.ErrNotExist):
				t.Errorf("chiod created the dangling link's target %s: %q %v", victim, b, rerr)
			case !dangling && (rerr != nil || string(b) != "precious\n"):
				t.Errorf("chiod wrote through the link: %s now holds %q (%v), want %q", victim, b, rerr, "precious\n")
			}
			if err == nil || !strings.Contains(err.Error(), daemon.PIDFile) {
				t.Errorf("chiod started with %s a symlink (err %v), want a refusal naming it", daemon.PIDFile, err)
			}
		})
	}
}
