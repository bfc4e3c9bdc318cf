//go:build unix

package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
)

// A data dir owned by another user is one that user may write to, whatever
// its mode: its owner can chmod it, replace kernel.pem, a token file or
// chio.db in it, or have planted a token of their choosing before the
// first start (a root chiod reads their 0600 files as its own). chiod
// refuses it, naming the owner, before writing anything, as it refuses a
// data dir group or others may write to (and sshd a key directory another
// user owns). It used to check the mode alone: a root chiod started on a
// directory another user made (say under /tmp) took that user's token as
// the admin's.
func TestDataDirOwnedByAnotherUserIsRefused(t *testing.T) {
	var dir string
	planted := strings.Repeat("e", 64) // the other user's chosen admin token
	if os.Geteuid() == 0 {
		// As root: a directory another user (nobody) made, with their token.
		dir = filepath.Join(t.TempDir(), "chio-data")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		tok := filepath.Join(dir, daemon.AdminTokenFile)
		if err := os.WriteFile(tok, []byte(planted+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{tok, dir} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		// Any other user: the root directory is owned by root. Nothing
		// can be written there, refused or not.
		dir = "/"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &syncBuffer{}
	served := make(chan struct{}, 1)
	err := daemon.Run(ctx, daemon.Options{ConfigPath: quickstart(), Listen: "127.0.0.1:0", DataDir: dir, Out: out,
		Getenv: func(string) string { return "" },
		Ready:  func(string) { served <- struct{}{}; cancel() }})
	select {
	case <-served:
		t.Fatalf("chiod started on %s, a data dir another user owns (its admin token: theirs); log:\n%s", dir, out)
	default:
	}
	if err == nil || !strings.Contains(err.Error(), "refusing to start") || !strings.Contains(err.Error(), "owned by uid") ||
		!strings.Contains(err.Error(), "chown") {
		t.Fatalf("data dir %s owned by another user: err = %v, want a refusal naming its owner and saying to chown it; log:\n%s", dir, err, out)
	}
	if os.Geteuid() == 0 {
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			t.Errorf("the refused start wrote in %s: %v", dir, ents)
		}
	}
}
