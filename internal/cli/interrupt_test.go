//go:build unix

package cli_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// The real process is interrupted in internal/e2e (interrupt_test.go); these
// cover the other places a signal can meet `chio call`. Each test signals
// its own process only from chiod's side of a request the CLI is making,
// so the CLI's handler (onInterrupt) is installed and catches it.

// signalOnRequest answers POST /v1/calls with status and body, and on the
// n-th request of any kind sends sig to this process and then holds that
// request until the client goes. It counts POSTs.
func signalOnRequest(t *testing.T, sig syscall.Signal, n int32, status int, body string) *httptest.Server {
	t.Helper()
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == n {
			if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
				t.Error(err)
			}
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A retry that met its call allowed and executing waits for it; a SIGTERM
// then says the call goes on and how to await it — not "pending", not
// denied, not an error.
func TestCallInterruptedWhileItsCallExecutesNamesIt(t *testing.T) {
	srv := signalOnRequest(t, syscall.SIGTERM, 2, http.StatusAccepted, inflightPost)
	so, se, code := retryRefund(inflightAgent(t, srv.URL))
	if code != cli.ExitTerminated || so != "" ||
		!strings.Contains(se, "chio: interrupted (SIGTERM) while the call was executing.") ||
		!strings.Contains(se, "chio: request id: run-42:refund — chiod allowed the call") ||
		!strings.Contains(se, "chio: or wait for its outcome: chio await run-42:refund") ||
		strings.Contains(se, "denied") || strings.Contains(se, "pending") {
		t.Fatalf("exit %d (want %d), stdout %q, stderr:\n%s", code, cli.ExitTerminated, so, se)
	}
}

// A signal during the pause between attempts (the first answer was a
// proxy's 503) stops the retries: no attempt is sent after it, and the
// call, which the first attempt may have reached chiod with, is named. The
// signal is sent as the CLI announces the retry, just before its pause.
func TestCallInterruptedBetweenRetriesSendsNoMore(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("upstream down"))
	}))
	t.Cleanup(srv.Close)
	env := inflightAgent(t, srv.URL)
	var so bytes.Buffer
	se := &signalOnWrite{t: t, trigger: "retrying request", sig: syscall.SIGINT}
	code := cli.Main([]string{"call", "demo", "issue_refund", "--args", `{"amount":1}`, "--request-id", "run-42:refund"},
		&cli.Env{Stdin: strings.NewReader(""), Stdout: &so, Stderr: se, Getenv: func(k string) string { return env[k] }})
	if code != cli.ExitInterrupted || so.Len() != 0 || posts.Load() != 1 ||
		!strings.Contains(se.String(), "chio: interrupted (SIGINT) before chiod's answer arrived.") ||
		!strings.Contains(se.String(), "chio call demo issue_refund --request-id run-42:refund") {
		t.Fatalf("exit %d (want %d), %d POSTs (want 1), stdout %q, stderr:\n%s", code, cli.ExitInterrupted, posts.Load(), so.String(), se)
	}
}

// signalOnWrite is a stderr that sends sig to this process once a line
// holding trigger is written.
type signalOnWrite struct {
	bytes.Buffer
	t       *testing.T
	trigger string
	sig     syscall.Signal
	sent    bool
}

func (w *signalOnWrite) Write(p []byte) (int, error) {
	if !w.sent && strings.Contains(string(p), w.trigger) {
		w.sent = true
		if err := syscall.Kill(syscall.Getpid(), w.sig); err != nil {
			w.t.Error(err)
		}
	}
	return w.Buffer.Write(p)
}

// chio await interrupted in its long-poll names what it waited for.
func TestAwaitInterruptedSaysHowToResume(t *testing.T) {
	srv := signalOnRequest(t, syscall.SIGINT, 1, http.StatusOK, "")
	env := inflightAgent(t, srv.URL)
	so, se, code := chio(env, "await", "run-42:refund", "--timeout", "60s")
	if code != cli.ExitInterrupted || so != "" ||
		!strings.Contains(se, "chio: interrupted (SIGINT) while waiting for run-42:refund (no answer yet); the call goes on without this process.") ||
		!strings.Contains(se, "chio: wait again with: chio await run-42:refund") {
		t.Fatalf("exit %d (want %d), stdout %q, stderr:\n%s", code, cli.ExitInterrupted, so, se)
	}
}
