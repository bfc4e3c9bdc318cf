package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/dispatch/mcp"
)

// chiod answers a tools/call with the upstream's result re-encoded by the
// MCP SDK, which escapes <, > and & as \u003c: six bytes for one. The
// bridge read chiod's answers only up to MaxRequestBytes (1 MiB + 64 KiB),
// the bound on what a client may send, so a result well within what chio
// records (MaxResultBytes, 1 MiB) — 300 KiB of HTML already — failed the
// bridge's read: the tool had run, the agent got a JSON-RPC error
// ("malformed event: SSE event exceeded …") with no request id to await,
// and a client that calls again runs the tool again.
func TestBridgeReceivesAResultChiodSendsLargerThanRecorded(t *testing.T) {
	up := &rawUp{tools: benignPay}
	// Well within what chio records (MaxResultBytes), each byte escaped to
	// six on the way to the bridge: past the old bound, not so large that
	// the SDK's coding of it is slow under the race detector.
	text := strings.Repeat("<", mcp.MaxResultBytes/4)
	up.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
	}
	w := newRawWorld(t, up, "")
	cs, err := w.bridge(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "bank__pay", Arguments: map[string]any{"amount": 5}})
	if err != nil {
		t.Fatalf("the tool ran (%d call), yet the agent got an error and no request id: %v", up.calls.Load(), err)
	}
	if r.IsError || resultText(r) != text {
		t.Fatalf("isError %v, %d bytes of text (want the tool's %d): %v", r.IsError, len(resultText(r)), len(text), r.Meta)
	}
}
