package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chio receipt export reported the receipt count from the export's header,
// which no signature covers: through a server (or a man in the middle)
// that edits it, "wrote 13 lines (1000 receipts)" for a file of 7
// receipts, exit 0, the file in place. A header that does not match the
// receipts that follow it is not a whole export (chiod writes seq 1..N
// after announcing N): the command must refuse it, say so, and leave
// --out as it was.
func TestExportRefusesAHeaderCountTheFileDoesNotHold(t *testing.T) {
	w := newAuditWorld(t)
	file := filepath.Join(w.dir, "audit.jsonl")
	if out, errOut, code := w.chio(t, "receipt", "export", "--out", file); code != 0 || !strings.Contains(out, "(7 receipts)") {
		t.Fatalf("honest export: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	front := tamperingProxy(t, w, "/v1/export", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"receipts":7}`), []byte(`"receipts":1000}`), 1)
	})
	out, errOut, code := chioAt(front.URL, "receipt", "export", "--out", file)
	if _, err := os.Stat(file); code != cli.ExitError || err == nil || strings.Contains(out, "1000 receipts") ||
		!strings.Contains(errOut, "1000") || !strings.Contains(errOut, "7 receipts") {
		t.Fatalf("export whose header announces 1000 receipts, holding 7: exit %d (file written: %v)\nstdout:\n%s\nstderr:\n%s", code, err == nil, out, errOut)
	}
}
