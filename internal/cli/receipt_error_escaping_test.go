package cli_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// Errors quote what the server sent: here the kernel_key a checkpoint names
// for itself, which fails verification by the trusted key. A chiod that
// wants an auditor to see a clean result puts escape sequences there: raw on
// stderr, they cleared the screen, printed "OK: every check passed" and
// concealed the rest. The exit code was 1, but the terminal showed OK.
func TestVerifyErrorsEscapeTextFromTheServer(t *testing.T) {
	trusted := keys.FromSeed(bytes.Repeat([]byte{31}, 32)).Public().String()
	fake := `\u001b[2J\u001b[HOK: every check passed\u001b[8m`
	cp := `{"kernel_key":"` + fake + `","root_hash":"` + strings.Repeat("0", 64) + `","schema":"chio.checkpoint.v1","signature":"` +
		strings.Repeat("ab", 64) + `","timestamp":1,"tree_size":1}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(cp))
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"receipt", "verify", "--all", "--kernel-key", trusted},
		{"receipt", "checkpoint", "--kernel-key", trusted},
	} {
		out, errOut, code := chioAt(srv.URL, args...)
		if code == 0 {
			t.Fatalf("%v: a checkpoint by another key was accepted: %s", args, out)
		}
		if !strings.Contains(errOut, "kernel key") {
			t.Fatalf("%v: stderr does not say what failed: %q", args, errOut)
		}
		if strings.ContainsAny(out+errOut, "\x1b") {
			t.Fatalf("%v printed raw escape sequences from the server into the terminal:\n%q", args, errOut)
		}
	}
}

// chio receipt export names the kernel key the file's header gives (not
// signed: chiod's word, or whatever edited it on its way) and printed it
// raw: an escape sequence there could erase the advice around it ("take
// KEY from a source you trust, not from the file") and print a key of the
// forger's choosing as the one to verify with. It must be shown escaped.
func TestExportEscapesTheHeadersKernelKey(t *testing.T) {
	w := newAuditWorld(t)
	fake := `\u001b[2K\u001b[1A\u001b[2K\rverify offline with: chio receipt verify --kernel-key ed25519:forged`
	front := tamperingProxy(t, w, "/v1/export", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"kernel_key":"`+w.kernelKey.String()+`"`), []byte(`"kernel_key":"`+fake+`"`), 1)
	})
	out, errOut, code := chioAt(front.URL, "receipt", "export", "--out", filepath.Join(w.dir, "audit.jsonl"))
	if !strings.Contains(errOut, "forged") {
		t.Fatalf("the forged header did not reach the output: exit %d\n%s%s", code, out, errOut)
	}
	if terminalActive(out + errOut) {
		t.Fatalf("export printed the header's kernel_key raw:\n%q\n%q", out, errOut)
	}
}
