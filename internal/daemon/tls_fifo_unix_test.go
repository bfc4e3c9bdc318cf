//go:build unix

package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// A [kernel] tls_cert_file that is a FIFO (a named pipe put where the
// certificate belongs, by mistake or on purpose) is refused at once, as a
// FIFO where a key belongs is (secretfile.Read): reading it waited for a
// writer, and chiod's start-up hung with no word of why.
func TestRefusedStartOnATLSCertificateThatIsAFIFO(t *testing.T) {
	certs := t.TempDir()
	certFile, keyFile := filepath.Join(certs, "cert.pem"), filepath.Join(certs, "key.pem")
	writeSelfSigned(t, filepath.Join(certs, "real-cert.pem"), keyFile)
	if err := syscall.Mkfifo(certFile, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "[kernel]\n",
		fmt.Sprintf("[kernel]\ntls_cert_file = %q\ntls_key_file = %q\n", certFile, keyFile), 1)
	cfg := filepath.Join(t.TempDir(), "chio.toml")
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err = runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), "tls_cert_file") || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO as tls_cert_file: %v, want a refusal naming tls_cert_file as not a regular file", err)
	}
	wantSameContent(t, dir, map[string]string{})
}
