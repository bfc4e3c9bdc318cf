package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A long-poll answered "still pending" at once, long before its wait (a
// proxy that drops ?wait=, a chiod shutting down), must not be asked again
// at once: as the SDKs' Await does, chio await pauses (backing off as
// after a failure) rather than poll chiod in a tight loop until --timeout.
func TestAwaitAnsweredPendingAtOnceDoesNotPollInATightLoop(t *testing.T) {
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusOK)
		io.WriteString(rw, `{"status":"pending_approval","request_id":"req-quick-1","approval_request_id":"ar-quick-1"}`)
	}))
	t.Cleanup(srv.Close)
	so, se, code := chio(inflightAgent(t, srv.URL), "await", "req-quick-1", "--timeout", "2s")
	if code != cli.ExitTimedOut {
		t.Fatalf("exit %d, want %d (timed out)\nstdout %q\nstderr %q", code, cli.ExitTimedOut, so, se)
	}
	// Backing off from 250 ms, a 2 s wait asks a handful of times; a
	// tight loop asks thousands.
	if n := gets.Load(); n > 30 {
		t.Fatalf("%d polls in a 2 s wait answered pending at once: a tight loop", n)
	}
}
