package cli_test

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// tamperingProxy serves w through a proxy that rewrites the body of path.
func tamperingProxy(t *testing.T, w *auditWorld, path string, rewrite func([]byte) []byte) *httptest.Server {
	t.Helper()
	target, _ := url.Parse(w.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			proxy.ServeHTTP(rw, r)
			return
		}
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				rw.Header()[k] = v
			}
		}
		rw.WriteHeader(rec.Code)
		rw.Write(rewrite(rec.Body.Bytes()))
	}))
	t.Cleanup(front.Close)
	return front
}

// chioAt runs the CLI against base with the reader token.
func chioAt(base string, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	env := map[string]string{"CHIO_URL": base, "CHIO_READ_TOKEN": "reader"}
	code := cli.Main(args, &cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
	return out.String(), errOut.String(), code
}

// keepLines keeps the export lines for which keep(i, line) is true and
// sets the header's (unsigned) receipt count to receipts.
func keepLines(body []byte, receipts string, keep func(i int, line []byte) bool) []byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 16<<20)
	for i := 0; sc.Scan(); i++ {
		l := append([]byte(nil), sc.Bytes()...)
		if i == 0 {
			l = bytes.Replace(l, []byte(`"receipts":7`), []byte(`"receipts":`+receipts), 1)
			out = append(out, l)
		} else if keep(i, l) {
			out = append(out, l)
		}
	}
	return append(bytes.Join(out, []byte("\n")), '\n')
}

// `verify --all` anchors the export to chiod's latest signed checkpoint:
// an export cut on its way (every receipt dropped; or the tail dropped with
// the checkpoints covering it) fails, though every line left verifies.
func TestVerifyAllRefusesAnExportCutInTransit(t *testing.T) {
	// No checkpoint covers the 7 receipts yet (the log signs hourly): the
	// latest checkpoint chiod serves must be fresh for the check to bite.
	w := newAuditWorld(t)
	cuts := map[string]func([]byte) []byte{
		"header only": func(b []byte) []byte { return keepLines(b, "0", func(int, []byte) bool { return false }) },
		"tail cut with its checkpoints": func(b []byte) []byte {
			return keepLines(b, "3", func(i int, l []byte) bool {
				return i <= 3 || bytes.Contains(l, []byte(`"tree_size":0}`)) // seq 1..3, the checkpoint of the empty log
			})
		},
	}
	for name, cut := range cuts {
		t.Run(name, func(t *testing.T) {
			front := tamperingProxy(t, w, "/v1/export", cut)
			out, errOut, code := chioAt(front.URL, "receipt", "verify", "--all", "--kernel-key", w.kernelKey.String())
			if code != cli.ExitError || !strings.Contains(out, "independently obtained checkpoint tree_size 7") ||
				!strings.Contains(out, "are missing") || !strings.Contains(out, "FAILED:") {
				t.Fatalf("verify --all on a cut export: %d\n%s%s", code, out, errOut)
			}
		})
	}
	if out, _, code := w.chio(t, "receipt", "verify", "--all", "--kernel-key", w.kernelKey.String()); code != 0 ||
		!strings.Contains(out, "pinned:      checkpoint tree_size 7") {
		t.Fatalf("honest verify --all: %d\n%s", code, out)
	}
	// A latest checkpoint the pinned key did not sign is refused outright.
	front := tamperingProxy(t, w, "/v1/checkpoints/latest", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"tree_size":7`), []byte(`"tree_size":3`), 1)
	})
	if _, errOut, code := chioAt(front.URL, "receipt", "verify", "--all", "--kernel-key", w.kernelKey.String()); code != cli.ExitError ||
		!strings.Contains(errOut, "the server's latest checkpoint") {
		t.Fatalf("forged latest checkpoint: %d %s", code, errOut)
	}
}

// An auditor saves a checkpoint, and later: proves the log only grew since
// (consistency proof), pins it when verifying an export offline (a cut tail
// then fails; the export alone says what it cannot prove), and when
// verifying one receipt.
func TestSavedCheckpointPinsLaterVerification(t *testing.T) {
	w := newAuditWorld(t)
	key := w.kernelKey.String()
	saved := filepath.Join(w.dir, "cp7.json")
	if _, _, code := w.chio(t, "receipt", "verify", "--all", "--kernel-key", key); code != 0 { // signs tree_size 7
		t.Fatal("verify --all")
	}
	out, errOut, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--out", saved)
	if code != 0 || !strings.Contains(out, "checkpoint tree_size 7") || !strings.Contains(out, "saved to "+saved) {
		t.Fatalf("checkpoint --out: %d\n%s%s", code, out, errOut)
	}
	raw, _ := os.ReadFile(saved)
	if stdout, _, code := w.chio(t, "receipt", "checkpoint", "--kernel-key", key); code != 0 || stdout != string(raw) {
		t.Fatalf("checkpoint to stdout: %d %q vs saved %q", code, stdout, raw)
	}

	w.echo("echo-later-1")
	w.echo("echo-later-2")
	file := filepath.Join(w.dir, "audit.jsonl")
	if _, _, code := w.chio(t, "receipt", "export", "--out", file); code != 0 { // signs tree_size 9
		t.Fatal("export")
	}
	out, errOut, code = w.chio(t, "receipt", "checkpoint", "--kernel-key", key, "--since", saved)
	if code != 0 || !strings.Contains(errOut, "checkpoint tree_size 9") || !strings.Contains(errOut, "consistent with "+saved+" (tree_size 7)") {
		t.Fatalf("checkpoint --since: %d\n%s%s", code, out, errOut)
	}
	// A consistency proof that does not verify fails the command.
	front := tamperingProxy(t, w, "/v1/checkpoints/consistency", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"hashes":["`), []byte(`"hashes":["00`), 1)[:len(b)]
	})
	if _, errOut, code := chioAt(front.URL, "receipt", "checkpoint", "--kernel-key", key, "--since", saved); code != cli.ExitError ||
		!strings.Contains(errOut, "does not extend "+saved) {
		t.Fatalf("bad consistency proof: %d %s", code, errOut)
	}

	// Offline: the whole export reaches the saved checkpoint.
	out, _, code = w.chio(t, "receipt", "verify", "--file", file, "--kernel-key", key, "--checkpoint", saved)
	if code != 0 || !strings.Contains(out, "pinned:      checkpoint tree_size 7") || strings.Contains(out, "not proven:") {
		t.Fatalf("verify --file --checkpoint: %d\n%s", code, out)
	}
	// The same export cut to its first 3 receipts (the echo calls) and the
	// checkpoints up to 3 (the empty log's only): alone it passes, and says
	// what it cannot prove; pinned, it fails.
	data, _ := os.ReadFile(file)
	cut := keepLines(data, "3", func(i int, l []byte) bool { return i <= 3 || bytes.Contains(l, []byte(`"tree_size":0}`)) })
	cut = bytes.Replace(cut, []byte(`"receipts":9`), []byte(`"receipts":3`), 1)
	cutFile := filepath.Join(w.dir, "cut.jsonl")
	os.WriteFile(cutFile, cut, 0o600)
	out, _, code = w.chio(t, "receipt", "verify", "--file", cutFile, "--kernel-key", key)
	if code != 0 || !strings.Contains(out, "not proven:  that the log ended at tree_size 0") {
		t.Fatalf("cut export alone: %d\n%s", code, out)
	}
	out, _, code = w.chio(t, "receipt", "verify", "--file", cutFile, "--kernel-key", key, "--checkpoint", saved)
	if code != cli.ExitError || !strings.Contains(out, "receipts 4..7 are missing") {
		t.Fatalf("cut export pinned: %d\n%s", code, out)
	}

	// One receipt: its proof's checkpoint must be of the saved log.
	out, _, code = w.chio(t, "receipt", "verify", w.approvedID, "--kernel-key", key, "--checkpoint", saved)
	if code != 0 || !strings.Contains(out, "consistent with the saved checkpoint tree_size 7") {
		t.Fatalf("verify ID --checkpoint: %d\n%s", code, out)
	}
	// A saved checkpoint signed by another key is refused before anything.
	bad := filepath.Join(w.dir, "bad.json")
	os.WriteFile(bad, bytes.Replace(raw, []byte(`"tree_size":7`), []byte(`"tree_size":8`), 1), 0o600)
	if _, errOut, code := w.chio(t, "receipt", "verify", "--file", file, "--kernel-key", key, "--checkpoint", bad); code != cli.ExitError ||
		!strings.Contains(errOut, "checkpoint "+bad) {
		t.Fatalf("tampered saved checkpoint: %d %s", code, errOut)
	}
}
