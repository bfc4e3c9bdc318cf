package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/policy"
)

const declaredSchemaPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[servers]]
id = "pay"
transport = "http"
url = %q

[[servers.tools]]
name = "transfer"
input_schema = '''
{"type": "object",
 "properties": {"amount": {"type": "integer", "minimum": 1, "description": "whole units"},
                "to": {"type": "string", "pattern": "^acct-[0-9]+$"}},
 "required": ["amount", "to"],
 "additionalProperties": false}
'''

[[servers.tools]]
name = "lookup"

[[grants]]
id = "pay"
server = "pay"
tool = "*"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`

// An http tool that declares input_schema is offered with it (tools/list,
// through a real MCP client and the bridge), not with the permissive
// {"type":"object"}; a builtin tool keeps its own schema and an http tool
// that declares none keeps the permissive one. A call that breaks the
// declared schema is refused before the pipeline, as for an MCP tool, and
// the tool server never sees it; a reload changes the schema offered.
func TestDeclaredInputSchemaIsOfferedAndEnforcedOverMCP(t *testing.T) {
	tools := &httpToolServer{}
	toolSrv := httptest.NewServer(tools)
	t.Cleanup(toolSrv.Close)
	text := fmt.Sprintf(declaredSchemaPolicy, toolSrv.URL)
	w := newPolicyToolsWorld(t, text, []string{"pay", "echo"})
	cs := w.bridge(t)

	offered := listedTools(t, cs)
	transfer := offered["pay__transfer"]
	if transfer == nil {
		t.Fatalf("pay__transfer is not offered: %v", sortedNames(offered))
	}
	var schema map[string]any
	raw, _ := json.Marshal(transfer.InputSchema)
	if err := json.Unmarshal(raw, &schema); err != nil || schema["additionalProperties"] != false ||
		!strings.Contains(string(raw), `"pattern":"^acct-[0-9]+$"`) || !strings.Contains(string(raw), `"whole units"`) {
		t.Fatalf("pay__transfer is offered with %s; want the declared input_schema", raw)
	}
	if raw, _ := json.Marshal(offered["pay__lookup"].InputSchema); string(raw) != `{"type":"object"}` {
		t.Errorf("pay__lookup declares no schema; offered with %s", raw)
	}
	if raw, _ := json.Marshal(offered["demo__echo"].InputSchema); string(raw) == string(mustJSON(t, transfer.InputSchema)) {
		t.Errorf("demo__echo lost its own schema: %s", raw)
	}

	for _, args := range []map[string]any{
		{"amount": "5", "to": "acct-1"},
		{"amount": 5},
		{"amount": 5, "to": "acct-1", "memo": "x"},
	} {
		r := callTool(t, cs, "pay__transfer", args)
		if !r.IsError || r.Meta[MetaStatus] != StatusRefused || !strings.Contains(resultText(r), "arguments do not match the tool's inputSchema") {
			t.Fatalf("%v: isError %v %q %v; want refused", args, r.IsError, resultText(r), r.Meta)
		}
		if _, ok := r.Meta[MetaReceiptID]; ok {
			t.Fatalf("%v: a refused call has a receipt: %v", args, r.Meta)
		}
	}
	if calls := tools.recorded(); len(calls) != 0 {
		t.Fatalf("the tool server saw calls that break the schema: %+v", calls)
	}
	r := callTool(t, cs, "pay__transfer", map[string]any{"amount": 5, "to": "acct-1"})
	if r.IsError || len(tools.recorded()) != 1 {
		t.Fatalf("valid transfer: isError %v %q %v", r.IsError, resultText(r), r.Meta)
	}

	// A reload that lets a memo through: offered, and accepted, at once.
	loose := strings.Replace(text, `"additionalProperties": false`, `"additionalProperties": {"type": "string"}`, 1)
	p, err := policy.Parse([]byte(loose), "loose.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.ApplyPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	w.gw.ToolsChanged("") // as chiod does after a reload
	mcptest.Eventually(t, 10*time.Second, "the reloaded schema to be offered", func() bool {
		tool := listedTools(t, cs)["pay__transfer"]
		if tool == nil {
			return false
		}
		raw, _ := json.Marshal(tool.InputSchema)
		return strings.Contains(string(raw), `"additionalProperties":{"type":"string"}`)
	})
	r = callTool(t, cs, "pay__transfer", map[string]any{"amount": 5, "to": "acct-1", "memo": "rent"})
	if r.IsError || len(tools.recorded()) != 2 {
		t.Fatalf("after the reload: isError %v %q %v", r.IsError, resultText(r), r.Meta)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
