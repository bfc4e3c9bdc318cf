//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// TestSecondSignalStopsChiodAtOnce: an operator who sends SIGTERM (or
// presses Ctrl-C) again while chiod waits out its shutdown grace on a stuck
// tool means "stop now". chiod used to ignore every signal after the first
// and keep waiting. A second signal must end it at once, as a kill would;
// nothing acknowledged is lost by that (the stuck call is finished at the
// next start by its delivery mode: at_most_once is recorded unknown, never
// sent again).
func TestSecondSignalStopsChiodAtOnce(t *testing.T) {
	var delivered atomic.Int64
	got := make(chan struct{}, 4)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		delivered.Add(1)
		select {
		case got <- struct{}{}:
		default:
		}
		select { // stuck
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	work := t.TempDir()
	cfg := filepath.Join(work, "chio.toml")
	pol := fmt.Sprintf(`
[[servers]]
id = "tools"
transport = "http"
url = %q
timeout_seconds = 600
[[servers.tools]]
name = "slow"
delivery = "at_most_once"
[[grants]]
id = "slow"
server = "tools"
tool = "slow"
`, srv.URL)
	if err := os.WriteFile(cfg, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(work, "data")
	d := startDaemon(t, cfg, data)
	a := newAgent(t, d, "slow")
	body, _ := json.Marshal(a.call(t, "req-second-signal", "tools", "slow", `{}`, ""))
	go func() {
		if resp, err := http.Post(d.url+"/v1/calls", "application/json", bytes.NewReader(body)); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never reached the tool")
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(d.log(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatal("chiod never began shutting down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(120 * time.Second):
		t.Fatal("chiod did not stop")
	}
	ws, _ := d.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("chiod ignored the second SIGTERM and waited out its grace on the stuck tool (%s); want it stopped by the signal at once", d.cmd.ProcessState)
	}

	// Stopped as by a kill: the next start finishes the call, once.
	d2 := startDaemon(t, cfg, data)
	var st struct {
		Status    string `json:"status"`
		Execution string `json:"execution"`
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		d2.do(t, "GET", "/v1/calls/req-second-signal", nil, &st)
		if st.Status != kernel.StatusDispatching || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Status != kernel.StatusAllowed || st.Execution != kernel.ExecutionUnknown || delivered.Load() != 1 {
		t.Fatalf("after the restart: status %q execution %q, %d deliveries; want allowed, unknown, 1", st.Status, st.Execution, delivered.Load())
	}
}
