//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// The shutdown tests' shared parts: a tool that hangs, a client waiting on
// chiod, chiod stopped by SIGTERM, and a call's end read after a restart.

// stuckTool is an HTTP tool server that never answers a delivery (the
// first only, with answerLater: later ones succeed). It counts deliveries
// and says on reached when one arrives.
type stuckTool struct {
	URL       string
	delivered atomic.Int64
	reached   chan struct{}
}

func newStuckTool(t *testing.T, answerLater bool) *stuckTool {
	t.Helper()
	st := &stuckTool{reached: make(chan struct{}, 4)}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then a closed connection ends r.Context()
		n := st.delivered.Add(1)
		select {
		case st.reached <- struct{}{}:
		default:
		}
		if n == 1 || !answerLater {
			select { // stuck
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees the handlers
	st.URL = srv.URL
	return st
}

// waitReached waits for a delivery to reach the tool.
func (st *stuckTool) waitReached(t *testing.T, what string) {
	t.Helper()
	select {
	case <-st.reached:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never reached the tool", what)
	}
}

// answer is what a client waiting on chiod was answered.
type answer struct {
	code int
	body string
	err  error
}

// postAsync posts body to url and sends the answer on the channel it returns.
func postAsync(url string, body []byte) <-chan answer {
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, string(b), err}
	}()
	return done
}

// waitExited waits for d to exit.
func waitExited(t *testing.T, d *daemon) {
	t.Helper()
	select {
	case <-d.exited:
	case <-time.After(120 * time.Second):
		t.Fatal("chiod did not stop")
	}
}

// stopBySIGTERM sends d SIGTERM and waits for it to exit.
func stopBySIGTERM(t *testing.T, d *daemon) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	waitExited(t, d)
}

// callEnd reads call id on d until it is no longer dispatching (recovery
// at start finishes it) or a minute passes, and returns its status and
// execution.
func callEnd(t *testing.T, d *daemon, id string) (status, execution string) {
	t.Helper()
	var st struct {
		Status    string `json:"status"`
		Execution string `json:"execution"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		d.do(t, "GET", "/v1/calls/"+id, nil, &st)
		if st.Status != kernel.StatusDispatching || time.Now().After(deadline) {
			return st.Status, st.Execution
		}
		time.Sleep(200 * time.Millisecond)
	}
}
