package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// `chio receipt checkpoint --since SAVED` fails when the "latest"
// checkpoint served is OLDER than the saved one (a stale mirror, a
// rolled-back view), and leaves the saved pin alone: it used to prove the
// served one a prefix of the saved one, say "the log only grew since", and
// with --out overwrite the auditor's pin with the older checkpoint.
func TestCheckpointSinceRefusesAnOlderLatest(t *testing.T) {
	w := newAuditWorld(t)
	key := w.kernelKey.String()
	if _, _, code := w.chio(t, "receipt", "verify", "--all", "--kernel-key", key); code != 0 { // signs tree_size 7
		t.Fatal("verify --all")
	}
	old := filepath.Join(w.dir, "cp7.json")
	if _, _, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", old); code != 0 {
		t.Fatal("checkpoint --out cp7")
	}
	oldRaw, _ := os.ReadFile(old)
	w.echo("later-1")
	w.echo("later-2")
	saved := filepath.Join(w.dir, "cp9.json")
	if out, errOut, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", saved); code != 0 || !strings.Contains(out, "tree_size 9") {
		t.Fatalf("checkpoint --out cp9: %d %s %s", code, out, errOut)
	}
	// A stale view serves the (validly signed) tree_size 7 checkpoint as latest.
	front := tamperingProxy(t, w, "/v1/checkpoints/latest", func([]byte) []byte { return bytes.TrimSpace(oldRaw) })
	out, errOut, code := chioAt(front.URL, "receipt", "checkpoint", "--kernel-key", key, "--since", saved, "--out", saved)
	after, _ := os.ReadFile(saved)
	if code != cli.ExitError || !strings.Contains(errOut, "older than") || !strings.Contains(string(after), `"tree_size":9`) {
		t.Fatalf("latest tree_size 7 against the saved tree_size 9: exit %d\n%s%s\nsaved pin now: %s", code, out, errOut, after)
	}
}
