package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The auditor keeps one pin file and refreshes it with `chio receipt
// checkpoint --out cp.json` (the command the doc and the command's own
// output suggest). A stale or rolled-back chiod serves an OLDER signed
// checkpoint as latest: the saved pin (tree_size 9) is an implicit --since,
// so the command refuses, exits non-zero and leaves the pin as it was (it
// used to replace it with tree_size 7, and a later `verify --checkpoint
// cp.json` then accepted a log rolled back to 7).
func TestCheckpointOutRefusesToReplaceANewerPin(t *testing.T) {
	w := newAuditWorld(t)
	key := w.kernelKey.String()
	pin := filepath.Join(w.dir, "cp.json")
	if _, _, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", pin); code != 0 { // tree_size 7
		t.Fatal("checkpoint --out (7)")
	}
	oldRaw, _ := os.ReadFile(pin)
	w.echo("later-1")
	w.echo("later-2")
	if out, _, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", pin); code != 0 || !strings.Contains(out, "tree_size 9") {
		t.Fatalf("checkpoint --out (9): %d %s", code, out)
	}
	front := tamperingProxy(t, w, "/v1/checkpoints/latest", func([]byte) []byte { return bytes.TrimSpace(oldRaw) })
	out, errOut, code := chioAt(front.URL, "receipt", "checkpoint", "--kernel-key", key, "--out", pin)
	after, _ := os.ReadFile(pin)
	if code == 0 || !strings.Contains(string(after), `"tree_size":9`) {
		t.Fatalf("refreshing the saved pin (tree_size 9) from a server serving tree_size 7 as latest: exit %d\n%s%s\npin now: %s", code, out, errOut, after)
	}
	if !strings.Contains(errOut, "is older than "+pin+" (tree_size 9)") {
		t.Fatalf("the refusal does not say why: %s", errOut)
	}
}

// A file at --out that holds no checkpoint this key signed is not replaced
// (it may be another log's pin, or not a pin at all) unless --force says so;
// --force also replaces a newer pin.
func TestCheckpointOutReplacesOnlyWithForce(t *testing.T) {
	w := newAuditWorld(t)
	key := w.kernelKey.String()
	other := filepath.Join(w.dir, "notes.txt")
	if err := os.WriteFile(other, []byte("not a checkpoint\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", other)
	if after, _ := os.ReadFile(other); code == 0 || string(after) != "not a checkpoint\n" || !strings.Contains(errOut, "refusing to replace it (--force replaces it)") {
		t.Fatalf("--out over a file that is not a checkpoint: exit %d, %s, file now %q", code, errOut, after)
	}
	if _, errOut, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", other, "--force"); code != 0 {
		t.Fatalf("--force: exit %d %s", code, errOut)
	}
	if after, _ := os.ReadFile(other); !strings.Contains(string(after), `"tree_size":7`) {
		t.Fatalf("--force did not save the checkpoint: %s", after)
	}

	pin := filepath.Join(w.dir, "cp.json")
	if _, _, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", pin); code != 0 { // tree_size 7
		t.Fatal("checkpoint --out (7)")
	}
	oldRaw, _ := os.ReadFile(pin)
	w.echo("later-1")
	if out, errOut, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", pin); code != 0 ||
		!strings.Contains(out, "tree_size 8") || !strings.Contains(out, "consistent with "+pin+" (tree_size 7)") {
		t.Fatalf("refreshing a pin with a newer checkpoint: %d %s %s", code, out, errOut)
	}
	front := tamperingProxy(t, w, "/v1/checkpoints/latest", func([]byte) []byte { return bytes.TrimSpace(oldRaw) })
	if _, errOut, code := chioAt(front.URL, "receipt", "checkpoint", "--kernel-key", key, "--out", pin, "--force"); code != 0 {
		t.Fatalf("--force over a newer pin: exit %d %s", code, errOut)
	}
	if after, _ := os.ReadFile(pin); !strings.Contains(string(after), `"tree_size":7`) {
		t.Fatalf("--force did not replace the pin: %s", after)
	}
}
