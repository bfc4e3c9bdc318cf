package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP names a result's members exactly ("structuredContent"), as the MCP
// SDK reads them, in chio's record of the call and in any MCP client. The
// gateway picked the structured content it hands the agent with Go's
// encoding/json, which matches member names case-insensitively and keeps
// the last match: an upstream whose result says "structuredContent":
// {"paid":true} and then "StructuredContent": {"paid":false} showed the
// agent paid:false, while its result as MCP reads it — and as chio
// recorded it — says paid:true. The agent must get the result as
// recorded (docs/mcp.md: "an MCP server's result, unchanged").
func TestAgentGetsTheStructuredContentMCPReads(t *testing.T) {
	const result = `{"content":[{"type":"text","text":"done"}],` +
		`"structuredContent":{"paid":true},"StructuredContent":{"paid":false}}`
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
		t.Fatal(err)
	}
	var recorded mcpsdk.CallToolResult
	if err := json.Unmarshal([]byte(result), &recorded); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(r.StructuredContent)
	want, _ := json.Marshal(recorded.StructuredContent)
	if string(got) != string(want) {
		t.Fatalf("the agent got structuredContent %s; the upstream's result, as MCP reads it and chio recorded it, says %s", got, want)
	}
}
