package mcp

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A stdio server that stops reading its stdin must not hold a delivery
// past the call's timeout: arguments larger than the pipe buffer (64 KiB;
// the kernel admits more) block in the pipe write, where the SDK no longer
// looks at the context. The write is bounded instead: the call fails as
// maybe delivered (part of it was written) and retryable, and the server
// is restarted.
func TestStalledStdioReaderDoesNotHoldDeliveryPastTimeout(t *testing.T) {
	o := fastOptions()
	o.CallTimeout = time.Second
	s := startSet(t, o, policy.Server{ID: "stuck", Command: stdioPeer(t, "stall")})
	u, _ := s.Upstream("stuck")
	starts := u.Starts()

	// The server reads this call and stops reading stdin.
	if _, err := dispatch(s, "req-stall", "stuck", "stall", `{}`); err == nil {
		t.Fatal("the stalled call answered")
	}
	big := `{"memo":"` + strings.Repeat("x", 200<<10) + `"}`
	if len(big) > kernel.MaxArgumentsBytes {
		t.Fatal("test arguments over the kernel's limit")
	}
	done := make(chan error, 1)
	go func() {
		_, err := dispatch(s, "req-big", "stuck", "pay", big)
		done <- err
	}()
	select {
	case err := <-done:
		var de *kernel.DeliveryError
		if !errors.As(err, &de) || de.NotDelivered || !de.Retryable {
			t.Fatalf("want a retryable maybe-delivered DeliveryError (part was written), got %v", err)
		}
	case <-time.After(8 * time.Second):
		if pid := u.PID(); pid > 0 { // unblock the write so the test can end
			p, _ := os.FindProcess(pid)
			_ = p.Kill()
		}
		t.Fatal("Dispatch with a 1 s timeout was still blocked after 8 s")
	}
	mcptest.Eventually(t, 10*time.Second, "the stuck server to be restarted", func() bool {
		return u.Ready() && u.Starts() > starts
	})
}
