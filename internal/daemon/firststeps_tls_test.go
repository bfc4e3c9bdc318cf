package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// Under [kernel] tls_cert_file / tls_key_file chiod serves HTTPS only, so
// the start-up text names https:// URLs: the "ready at" line, the
// CHIO_URL to export and the dashboard. (They were http:// whatever chiod
// served, so the printed first call failed against a TLS-only chiod.)
func TestFirstStepsNameHTTPSUnderTLS(t *testing.T) {
	certs := t.TempDir()
	certFile, keyFile := filepath.Join(certs, "cert.pem"), filepath.Join(certs, "key.pem")
	writeSelfSigned(t, certFile, keyFile)
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
	r := start(t, daemon.Options{ConfigPath: cfg, DataDir: t.TempDir()})
	out := r.out.String()
	https := strings.Replace(r.url, "http://", "https://", 1)
	for _, want := range []string{"chiod is ready at " + https + " ", "export CHIO_URL=" + https + " ", "Dashboard: " + https + "/dashboard/"} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up text under TLS lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, r.url) {
		t.Errorf("start-up text under TLS names plain %s:\n%s", r.url, out)
	}
}
