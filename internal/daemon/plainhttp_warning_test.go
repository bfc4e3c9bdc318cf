package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/daemon"
)

// chiod serving plain HTTP on an address other machines can reach sends
// the bearer tokens, approval tokens and session cookies its clients
// present in clear: it still starts (a TLS-terminating proxy in front is a
// sound deployment), but says so in its start-up log. On loopback it says
// nothing. It used to say nothing either way.
func TestPlainHTTPBeyondLoopbackIsWarnedOf(t *testing.T) {
	for listen, warned := range map[string]bool{"127.0.0.1:0": false, "0.0.0.0:0": true} {
		out := &syncBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan struct{}, 1)
		done := make(chan error, 1)
		go func() {
			done <- daemon.Run(ctx, daemon.Options{ConfigPath: quickstart(), DataDir: t.TempDir(), Listen: listen, Out: out,
				Getenv: func(string) string { return "" }, Ready: func(string) { ready <- struct{}{} }})
		}()
		select {
		case <-ready:
		case err := <-done:
			cancel()
			t.Fatalf("listen %s: chiod did not start: %v\n%s", listen, err, out)
		case <-time.After(20 * time.Second):
			cancel()
			t.Fatalf("listen %s: chiod did not start:\n%s", listen, out)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("listen %s: %v", listen, err)
		}
		log := out.String()
		got := strings.Contains(log, "level=WARN") && strings.Contains(log, "plain HTTP")
		if got != warned {
			t.Errorf("listen %s: a warning that chiod serves plain HTTP beyond loopback: %v, want %v; log:\n%s", listen, got, warned, log)
		}
	}
}
