package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/daemon"
)

// [kernel] public_url is where approvers reach chiod: the mailed links,
// Slack's "Review & sign" button, callback hints, and the session cookie's
// Secure flag (set only for https://) come from it. An http:// public_url
// beyond loopback says approvers reach chiod in clear, whatever chiod
// listens on (a proxy in front that does not terminate TLS): their session
// cookies (not Secure), signed votes and every request's arguments cross
// the network readable, and the dashboard cannot sign (WebCrypto needs
// HTTPS off loopback). chiod still starts, as for its own plain HTTP and a
// plain webhook, but says so; it used to say nothing when it listened on
// loopback.
func TestPlainHTTPPublicURLBeyondLoopbackIsWarnedOf(t *testing.T) {
	b, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	const anchor = `data_dir = "./chio-data"`
	if !strings.Contains(string(b), anchor) {
		t.Fatalf("quickstart.toml has no %s line", anchor)
	}
	for url, warned := range map[string]bool{
		"http://chio.example.com":      true,
		"http://10.0.0.7:7420":         true,
		"https://chio.example.com":     false,
		"http://localhost:7420":        false,
		"http://127.0.0.1:7420/prefix": false,
	} {
		cfg := filepath.Join(t.TempDir(), "chio.toml")
		s := strings.Replace(string(b), anchor, anchor+"\npublic_url = \""+url+"\"", 1)
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		r := start(t, daemon.Options{ConfigPath: cfg, DataDir: t.TempDir()}) // listens on 127.0.0.1:0
		if err := r.stop(); err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		log := r.out.String()
		got := strings.Contains(log, "level=WARN") && strings.Contains(log, "public_url")
		if got != warned {
			t.Errorf("public_url %s: a warning that approvers reach chiod over plain HTTP: %v, want %v; log:\n%s", url, got, warned, log)
		}
	}
}
