package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// An auditor who saves checkpoints as they go pins more than one:
// `verify --file EXPORT --checkpoint cp9.json --checkpoint cp7.json`.
// The flag took the last value and dropped the others without a word: an
// export cut back to tree_size 7 (exactly the honest export taken then)
// verified "OK: every check passed", exit 0, though cp9.json, which the
// auditor gave, shows the log held 9. A flag that takes one value must be
// refused when given twice, never silently narrowed to one of them.
func TestRepeatedFlagIsRefusedNotNarrowed(t *testing.T) {
	w := newAuditWorld(t)
	key := w.kernelKey.String()
	cut := filepath.Join(w.dir, "export7.jsonl")
	if out, errOut, code := w.chio(t, "receipt", "export", "--out", cut); code != 0 {
		t.Fatalf("export at 7: %d %s%s", code, out, errOut)
	}
	cp7 := filepath.Join(w.dir, "cp7.json")
	if _, errOut, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", cp7); code != 0 {
		t.Fatalf("checkpoint --out cp7: %s", errOut)
	}
	w.echo("later-1")
	w.echo("later-2")
	cp9 := filepath.Join(w.dir, "cp9.json")
	if out, errOut, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", cp9); code != 0 || !strings.Contains(out, "tree_size 9") {
		t.Fatalf("checkpoint --out cp9: %d %s%s", code, out, errOut)
	}
	if out, _, code := w.chio(t, "receipt", "verify", "--file", cut, "--kernel-key", key, "--checkpoint", cp9); code == 0 {
		t.Fatalf("the export cut to 7 against cp9 alone verified:\n%s", out)
	}
	for _, args := range [][]string{
		{"receipt", "verify", "--file", cut, "--kernel-key", key, "--checkpoint", cp9, "--checkpoint", cp7},
		{"receipt", "verify", "--file", cut, "--kernel-key", key, "--checkpoint=" + cp9, "--checkpoint=" + cp7},
		{"receipt", "verify", "--all", "--kernel-key", key, "--checkpoint", cp9, "--checkpoint", cp7},
	} {
		out, errOut, code := w.chio(t, args...)
		if code == 0 || strings.Contains(out, "OK") || !strings.Contains(errOut, "--checkpoint") {
			t.Errorf("`chio %s`: exit %d, want a refusal naming --checkpoint\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	// A repeatable flag stays repeatable.
	if out, errOut, code := w.chio(t, "receipt", "list", "--meta", "approver", "--meta", "approver_display_name=Finance Lead", "--kernel-key", key); code != 0 || strings.Count(out, "\n") != 3 {
		t.Fatalf("list with --meta twice: exit %d\n%s%s", code, out, errOut)
	}
}
