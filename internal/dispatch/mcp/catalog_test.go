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
