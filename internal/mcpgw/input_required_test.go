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

	"github.com/chiokernel/chio/kernel"
)

// An upstream that answers a tools/call with "input required" (MCP's
// multi-round-trip result: an elicitation for the client to put to its
// user, then a retry) did not finish the call, and chio records a
// tool_error: it never answers an upstream's question, and an answer is
// never an approval. The agent must be told that, not handed the
// upstream's question: passed on as an MCP result, the client's SDK puts
// "Approve the transfer?" to its user as if chio asked (or, without an
// elicitation handler, fails the call with a protocol error).
func TestInputRequiredResultIsNotPassedToTheAgent(t *testing.T) {
	const question = `"resultType":"input_required","requestState":"s1",` +
		`"inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"Approve the transfer?",` +
		`"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}`
	for name, result := range map[string]string{
		"with content":    `{"content":[],` + question + `}`,
		"without content": `{` + question + `}`,
	} {
		t.Run(name, func(t *testing.T) {
			up := &rawUp{tools: benignPay, onCall: func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
			}}
			w := newRawWorld(t, up, "")
			cs, err := w.bridge(t)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "bank__pay", Arguments: map[string]any{"amount": 5}})
			if err != nil {
				t.Fatalf("the upstream's question reached the agent's MCP client: %v", err)
			}
			raw, _ := json.Marshal(r)
			if r.NeedsInput() || len(r.InputRequests) > 0 || strings.Contains(string(raw), "Approve the transfer?") {
				t.Fatalf("the agent is handed the upstream's question: %s", raw)
			}
			if !r.IsError || r.Meta[MetaExecution] != kernel.ExecutionToolError {
				t.Fatalf("want an isError result with _meta[%q] = %q, as recorded: %s", MetaExecution, kernel.ExecutionToolError, raw)
			}
		})
	}
}
