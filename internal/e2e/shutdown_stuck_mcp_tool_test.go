//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/kernel"
)

// TestShutdownCutsAStuckStdioMCPToolWithAnAnswer is
// TestShutdownCutsAStuckToolCallWithAnAnswer for a tool of an MCP server
// chiod runs over stdio (the test peer's "hang", which never answers):
// when SIGTERM's grace ends, the agent waiting on the call gets chiod's
// answer, a retryable outcome_unknown saying the call stays in flight, and
// chiod exits 1; the next start settles the at_most_once call unknown and
// never sends it again (the server, restarted, is not called again).
func TestShutdownCutsAStuckStdioMCPToolWithAnAnswer(t *testing.T) {
	peer := mcptest.PeerStdio(t)
	argv, _ := json.Marshal(peer)
	work := t.TempDir()
	mark := filepath.Join(work, "hang.calls")
	cfg := filepath.Join(work, "chio.toml")
	pol := fmt.Sprintf(`
[[servers]]
id = "peer"
transport = "mcp"
command = %s
timeout_seconds = 600
[[servers.tools]]
name = "hang"
delivery = "at_most_once"

[[grants]]
id = "hang"
server = "peer"
tool = "hang"
`, argv)
	if err := os.WriteFile(cfg, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(work, "data")
	d := startDaemon(t, cfg, data)
	// chiod serves before its MCP servers connect: a call sent earlier
	// names a tool not yet offered.
	mcptest.Eventually(t, 60*time.Second, "the MCP server to connect", func() bool {
		return strings.Contains(d.log(), `"mcp server connected"`)
	})
	a := newAgent(t, d, "hang")
	args, _ := json.Marshal(map[string]string{"mark": mark})
	body, _ := json.Marshal(a.call(t, "req-stuck-mcp", "peer", "hang", string(args), ""))
	type answer struct {
		code int
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Post(d.url+"/v1/calls", "application/json", bytes.NewReader(body))
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, string(b), err}
	}()
	calls := func() int { b, _ := os.ReadFile(mark); return strings.Count(string(b), "called") }
	mcptest.Eventually(t, 60*time.Second, "the call to reach the stuck tool", func() bool {
		select {
		case ans := <-done:
			t.Fatalf("the call was answered before it reached the tool: %d %s %v", ans.code, ans.body, ans.err)
		default:
		}
		return calls() == 1
	})
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(120 * time.Second):
		t.Fatal("chiod did not stop")
	}
	ans := <-done
	if ans.err != nil || ans.code != http.StatusInternalServerError || !strings.Contains(ans.body, `"error":"outcome_unknown"`) ||
		!strings.Contains(ans.body, "shutting down") {
		t.Fatalf("the agent waiting on the stuck MCP tool got %d %s %v; want chiod's answer: 500 outcome_unknown, shutting down, the call stays in flight", ans.code, ans.body, ans.err)
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("chiod exited %d after cutting a stuck call off; want 1", code)
	}

	d2 := startDaemon(t, cfg, data)
	var st struct {
		Status    string `json:"status"`
		Execution string `json:"execution"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		d2.do(t, "GET", "/v1/calls/req-stuck-mcp", nil, &st)
		if st.Status != kernel.StatusDispatching || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Status != kernel.StatusAllowed || st.Execution != kernel.ExecutionUnknown || calls() != 1 {
		t.Fatalf("after the restart: status %q execution %q, the tool called %d times; want allowed, unknown, once", st.Status, st.Execution, calls())
	}
}
