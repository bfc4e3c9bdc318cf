package mcp

import (
	"encoding/json"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool whose schema the go-sdk's Server.AddTool would refuse (with a
// panic) is left out of the catalogue: the gateway offers every catalogued
// tool through AddTool.
func TestCatalogRefusesSchemasTheSDKCannotOffer(t *testing.T) {
	tests := []struct {
		name, schema string
		ok           bool
	}{
		{"object", `{"type":"object","properties":{"a":{"type":"integer"}}}`, true},
		{"type with a capital", `{"Type":"object"}`, false},
		{"type upper case", `{"TYPE":"object"}`, false},
		{"no type", `{"properties":{}}`, false},
		{"not object", `{"type":"array"}`, false},
		{"x-mcp-header on an object", `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"X-A"}}}`, false},
		{"x-mcp-header not a token", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X A"}}}`, false},
		{"x-mcp-header fine", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X-A"}}}`, true},
	}
	probe := newAddProbe()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var schema any
			if err := json.Unmarshal([]byte(tc.schema), &schema); err != nil {
				t.Fatal(err)
			}
			tool, err := compileTool("s", &mcpsdk.Tool{Name: "pay", InputSchema: schema})
			if err == nil {
				err = probe.check(tool)
			}
			if (err == nil) != tc.ok {
				t.Fatalf("schema %s: err = %v, want ok=%v", tc.schema, err, tc.ok)
			}
		})
	}
}

// A tool whose inputSchema reaches itself again without descending into
// the arguments is left out of the catalogue: jsonschema-go would follow
// the loop until the stack overflows, a fatal error that ends chiod, on
// the first call to the tool (its /mcp pre-check, or the kernel's
// mcp-input-schema guard for POST /v1/calls). An upstream server must not
// be able to end chiod by listing a tool.
func TestCatalogRefusesSchemasWhoseReferencesLoop(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","allOf":[{"$ref":"#"}]}`,
		`{"type":"object","AllOf":[{"$ref":"#"}]}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}}}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(schema), &v); err != nil {
			t.Fatal(err)
		}
		if _, err := compileTool("s", &mcpsdk.Tool{Name: "pay", InputSchema: v}); err == nil {
			t.Errorf("schema %s was catalogued; validating against it never ends", schema)
		}
	}
	// Recursion that applies a subschema more than once per level of the
	// arguments costs 2^depth to validate: refused as well.
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#"}},"patternProperties":{"^a":{"$ref":"#"}}}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(schema), &v); err != nil {
			t.Fatal(err)
		}
		if _, err := compileTool("s", &mcpsdk.Tool{Name: "pay", InputSchema: v}); err == nil {
			t.Errorf("schema %s was catalogued; validating nested arguments against it costs 2^depth", schema)
		}
	}
	// Recursion that descends (a tree) is fine.
	tree := map[string]any{"type": "object", "properties": map[string]any{"kids": map[string]any{"type": "array", "items": map[string]any{"$ref": "#"}}}}
	tool, err := compileTool("s", &mcpsdk.Tool{Name: "tree", InputSchema: tree})
	if err != nil {
		t.Fatal(err)
	}
	if err := tool.Validate(json.RawMessage(`{"kids":[{"kids":[]},{"kids":[{"kids":[]}]}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := tool.Validate(json.RawMessage(`{"kids":[{"kids":3}]}`)); err == nil {
		t.Fatal("a malformed tree passed")
	}
}
