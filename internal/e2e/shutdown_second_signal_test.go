//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	tool := newStuckTool(t, false)
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
`, tool.URL)
	if err := os.WriteFile(cfg, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(work, "data")
	d := startDaemon(t, cfg, data)
	a := newAgent(t, d, "slow")
	body, _ := json.Marshal(a.call(t, "req-second-signal", "tools", "slow", `{}`, ""))
	postAsync(d.url+"/v1/calls", body)
	tool.waitReached(t, "the call")
	d.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(d.log(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatal("chiod never began shutting down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	waitExited(t, d)
	ws, _ := d.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("chiod ignored the second SIGTERM and waited out its grace on the stuck tool (%s); want it stopped by the signal at once", d.cmd.ProcessState)
	}

	// Stopped as by a kill: the next start finishes the call, once.
	status, execution := callEnd(t, startDaemon(t, cfg, data), "req-second-signal")
	if status != kernel.StatusAllowed || execution != kernel.ExecutionUnknown || tool.delivered.Load() != 1 {
		t.Fatalf("after the restart: status %q execution %q, %d deliveries; want allowed, unknown, 1", status, execution, tool.delivered.Load())
	}
}
