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

// A data dir under a directory every user may write to (o+w, not sticky)
// is one any of them may rename away, with kernel.pem, chio.db and all,
// whatever its own mode and owner: the next start then makes a new
// deployment there, and with an authority_key the capabilities revoked in
// the old store are honoured again. chiod refuses it, naming the
// directory, as it refuses a policy file under one (checkPolicyDirs). It
// used to check the data dir alone.
func TestDataDirUnderWorldWritableDirIsRefused(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o777); err != nil { // not sticky
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "chio-data")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &syncBuffer{}
	served := make(chan struct{}, 1)
	err := daemon.Run(ctx, daemon.Options{ConfigPath: quickstart(), Listen: "127.0.0.1:0", DataDir: dir, Out: out,
		Getenv: func(string) string { return "" },
		Ready:  func(string) { served <- struct{}{}; cancel() }})
	select {
	case <-served:
		t.Fatalf("chiod started on %s, under %s (mode 0777); log:\n%s", dir, parent, out)
	default:
	}
	if err == nil || !strings.Contains(err.Error(), "refusing to start") || !strings.Contains(err.Error(), parent) ||
		!strings.Contains(err.Error(), "chmod o-w "+parent) {
		t.Fatalf("data dir under a world-writable dir: err = %v, want a refusal naming %s and `chmod o-w`; log:\n%s", err, parent, out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the refused start left the data dir %s it made", dir)
	}
	// Sticky (as /tmp): others cannot rename what they do not own there.
	if err := os.Chmod(parent, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	r := start(t, daemon.Options{DataDir: dir})
	if err := r.stop(); err != nil {
		t.Fatalf("data dir under a sticky dir: %v", err)
	}
}
