//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
	done := postAsync(d.url+"/v1/calls", body)
	calls := func() int { b, _ := os.ReadFile(mark); return strings.Count(string(b), "called") }
	mcptest.Eventually(t, 60*time.Second, "the call to reach the stuck tool", func() bool {
		select {
		case ans := <-done:
			t.Fatalf("the call was answered before it reached the tool: %d %s %v", ans.code, ans.body, ans.err)
		default:
		}
		return calls() == 1
	})
	stopBySIGTERM(t, d)
	ans := <-done
	if ans.err != nil || ans.code != http.StatusInternalServerError || !strings.Contains(ans.body, `"error":"outcome_unknown"`) ||
		!strings.Contains(ans.body, "shutting down") {
		t.Fatalf("the agent waiting on the stuck MCP tool got %d %s %v; want chiod's answer: 500 outcome_unknown, shutting down, the call stays in flight", ans.code, ans.body, ans.err)
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("chiod exited %d after cutting a stuck call off; want 1", code)
	}

	status, execution := callEnd(t, startDaemon(t, cfg, data), "req-stuck-mcp")
	if status != kernel.StatusAllowed || execution != kernel.ExecutionUnknown || calls() != 1 {
		t.Fatalf("after the restart: status %q execution %q, the tool called %d times; want allowed, unknown, once", status, execution, calls())
	}
}
