//go:build unix

package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// Ctrl-C during `chio receipt export` stops the export, removes its
// half-written temporary file and says that nothing was written: before,
// the signal killed the process, the deferred clean-up never ran and a
// hidden ".audit.jsonl.*" was left beside the target. The signal is sent
// from chiod's side once part of the export has gone out, so the CLI is
// mid-copy when it arrives.
func TestExportInterruptedLeavesNothingBehind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jsonl")
		w.Write([]byte(`{"format":"chio.export.v1","kernel_key":"ed25519:00","exported_at":1,"receipts":100000}` + "\n"))
		w.Write([]byte(strings.Repeat(`{"receipt":"x"}`+"\n", 4096)))
		w.(http.Flusher).Flush()
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
			t.Error(err)
		}
		<-r.Context().Done() // the rest of the export never comes
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	out := filepath.Join(dir, "audit.jsonl")
	so, se, code := chioAt(srv.URL, "receipt", "export", "--out", out)
	if code != cli.ExitInterrupted || so != "" || !strings.Contains(se, "interrupted (SIGINT)") || !strings.Contains(se, "nothing written to "+out) {
		t.Errorf("exit %d (want %d), stdout %q, stderr:\n%s", code, cli.ExitInterrupted, so, se)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range left {
		t.Errorf("the interrupted export left %s", f.Name())
	}
}
