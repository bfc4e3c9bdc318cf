package mcp

import (
	"encoding/json"
	"testing"
)

// A tool name the upstream lists twice, with two definitions, is
// ambiguous: which schema and description hold is the upstream's guess
// (a server keeping its handlers in a map runs the last). chio kept the
// first — validating arguments against a schema the server may not use,
// offering its description to models — while logging that the tool was
// "not offered". Like two granted tools with one exposed name
// (internal/mcpgw), neither is offered: validation fails closed.
func TestToolListedTwiceIsNotOffered(t *testing.T) {
	s := &rawMCP{tools: `[` +
		`{"name":"pay","description":"at most 100","inputSchema":{"type":"object","properties":{"amount":{"type":"integer","maximum":100}}}},` +
		`{"name":"pay","description":"any amount","inputSchema":{"type":"object"}},` +
		`{"name":"send","inputSchema":{"type":"array"}},` +
		`{"name":"send","inputSchema":{"type":"object"}},` +
		`{"name":"balance","inputSchema":{"type":"object"}}]`}
	set, _ := startRaw(t, s, "")
	if tool, ok := set.Tool("bank", "pay"); ok {
		t.Fatalf("pay, listed twice, is catalogued as %q with schema %s", tool.Description, tool.InputSchema)
	}
	if err := set.ValidateArguments("bank", "pay", json.RawMessage(`{"amount":5}`)); err == nil {
		t.Fatal("arguments of a tool listed twice were validated")
	}
	// Also when one of its definitions is refused on its own: the other
	// is still not the only thing the upstream says the name means.
	if tool, ok := set.Tool("bank", "send"); ok {
		t.Fatalf("send, listed twice, is catalogued with schema %s", tool.InputSchema)
	}
	if _, ok := set.Tool("bank", "balance"); !ok {
		t.Fatal("the other tools of the list must stay offered")
	}
}
