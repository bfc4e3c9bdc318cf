package mcpgw

import (
	"encoding/json"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/kernel"
)

// The output of a tool on another transport (builtin, http) is JSON that
// is not an MCP result: it is handed over as text, whole. An MCP result is
// returned as the server sent it.
func TestAllowedOutputOfOtherTransportsIsText(t *testing.T) {
	for _, output := range []string{`{"echo":{"hello":"mcp"}}`, `{"refund_id":"rf-1","status":"issued"}`, `[1,2]`, `"done"`, `{"content":"not a list"}`} {
		r := allowed(&kernel.Outcome{Status: kernel.StatusAllowed, RequestID: "req-1", Output: json.RawMessage(output),
			Execution: kernel.ExecutionSucceeded}, false)
		if len(r.Content) != 1 || r.IsError {
			t.Fatalf("%s: %d content items, isError %v", output, len(r.Content), r.IsError)
		}
		if tc, ok := r.Content[0].(*mcpsdk.TextContent); !ok || tc.Text != output {
			t.Fatalf("%s: content %#v", output, r.Content[0])
		}
	}
	r := allowed(&kernel.Outcome{Status: kernel.StatusAllowed, RequestID: "req-2", Execution: kernel.ExecutionSucceeded,
		Output: json.RawMessage(`{"content":[{"type":"text","text":"Echo: hi"}],"structuredContent":{"n":1}}`)}, true)
	if len(r.Content) != 1 || r.Content[0].(*mcpsdk.TextContent).Text != "Echo: hi" || string(r.StructuredContent.(json.RawMessage)) != `{"n":1}` {
		t.Fatalf("MCP result: %#v", r)
	}
}
