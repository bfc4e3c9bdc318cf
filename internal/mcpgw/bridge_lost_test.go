package mcpgw

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/kernel"
)

// The bridge retries a call whose connection to chiod was lost, under the
// same request id (chiod answers a repeat with the first call's outcome).
// When every retry failed too — chiod restarting, or unreachable, while
// the tool runs — it answered its client with the connection's error: no
// request id, nothing saying the call had reached chio. The tool was
// running; an MCP client's retry is a new call under a new request id, and
// runs the tool again. Like an outcome chiod could not record, the answer
// must name the request id to await and say not to call again.
func TestBridgeLostChiodAnswersTheRequestIDToAwait(t *testing.T) {
	release := make(chan struct{})
	up := &rawUp{tools: benignPay}
	up.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		<-release // the tool runs until the test ends
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}
	w := newRawWorld(t, up, "")
	t.Cleanup(func() { close(release) }) // before the world's own cleanup (LIFO)
	cs, err := w.bridge(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type answer struct {
		r   *mcpsdk.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "bank__pay", Arguments: map[string]any{"amount": 5}})
		done <- answer{r, err}
	}()
	settle(t, "the tool to start", func() bool { return up.calls.Load() == 1 })
	// chiod becomes unreachable while the tool runs.
	w.Srv.Listener.Close()
	w.Srv.CloseClientConnections()
	a := <-done
	if a.err != nil {
		t.Fatalf("the call reached chio and its tool is running, yet the agent gets an error with no request id "+
			"(its retry is a new call): %v", a.err)
	}
	id, _ := a.r.Meta[MetaRequestID].(string)
	text := resultText(a.r)
	if !a.r.IsError || a.r.Meta[MetaStatus] != StatusUnrecorded || !strings.HasPrefix(id, "mcp-") ||
		!strings.Contains(text, "do not call it again") || !strings.Contains(text, AwaitTool) {
		t.Fatalf("want an isError %q result naming the request id to await: %q %v", StatusUnrecorded, text, a.r.Meta)
	}
	if rec, err := w.Kernel.Call(id); err != nil || rec.Status != kernel.StatusDispatching {
		t.Fatalf("the request id named is not the running call: %+v %v", rec, err)
	}
}
