package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
)

// A webhook at an http:// URL beyond loopback carries every approval
// request (the tool, its arguments, the agent) across the network in
// clear. chiod still starts (a sidecar or mesh that adds TLS is a sound
// deployment, as for chiod's own plain HTTP), but says so in its start-up
// log, naming the host and never the URL's path or query, which may hold
// a token. On loopback, or over https, it says nothing. It used to say
// nothing either way.
func TestPlainHTTPWebhookBeyondLoopbackIsWarnedOf(t *testing.T) {
	b, err := os.ReadFile(quickstart())
	if err != nil {
		t.Fatal(err)
	}
	for url, warned := range map[string]bool{
		"http://hooks.example.com/services/tok3n-a1b2": true,
		"http://10.0.0.7:8080/hook":                    true,
		"http://127.0.0.1:1/hook":                      false,
		"http://localhost:1/hook":                      false,
		"https://hooks.example.com/services/tok3n":     false,
	} {
		cfg := filepath.Join(t.TempDir(), "chio.toml")
		if err := os.WriteFile(cfg, append(b, "\n[channels.webhook]\nurl = \""+url+"\"\n"...), 0o600); err != nil {
			t.Fatal(err)
		}
		out := &syncBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan struct{}, 1)
		done := make(chan error, 1)
		go func() {
			done <- daemon.Run(ctx, daemon.Options{ConfigPath: cfg, DataDir: t.TempDir(), Listen: "127.0.0.1:0", Out: out,
				Getenv: func(string) string { return "" }, Ready: func(string) { ready <- struct{}{} }})
		}()
		select {
		case <-ready:
		case err := <-done:
			cancel()
			t.Fatalf("%s: chiod did not start: %v\n%s", url, err, out)
		case <-time.After(20 * time.Second):
			cancel()
			t.Fatalf("%s: chiod did not start:\n%s", url, out)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		log := out.String()
		got := strings.Contains(log, "level=WARN") && strings.Contains(log, "webhook")
		if got != warned {
			t.Errorf("%s: a warning that the webhook is plain HTTP beyond loopback: %v, want %v; log:\n%s", url, got, warned, log)
		}
		if strings.Contains(log, "tok3n") {
			t.Errorf("%s: the log quotes the URL's path:\n%s", url, log)
		}
	}
}
