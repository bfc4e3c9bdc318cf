package policy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// payPolicy has an http tool server whose transfer tool declares SCHEMA
// (a TOML value, written on line 9).
const payPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "https://pay.example.com/chio"

[[servers.tools]]
name = "transfer"
input_schema = SCHEMA

[[grants]]
id = "pay"
server = "pay"
tool = "transfer"
`

const transferSchema = `'''
{
  "type": "object",
  "properties": {
    "amount":   { "type": "integer", "minimum": 1 },
    "currency": { "type": "string", "enum": ["USD", "EUR"] },
    "to":       { "type": "string", "minLength": 1 }
  },
  "required": ["amount", "currency", "to"],
  "additionalProperties": false
}
'''`

func withSchema(schema string) string { return strings.Replace(payPolicy, "SCHEMA", schema, 1) }

// A platform team declares the input schema of a non-MCP tool in the
// policy; the policy holds it compiled, and checks arguments against it.
func TestDeclaredInputSchemaLoadsAndValidates(t *testing.T) {
	p, err := policy.Parse([]byte(withSchema(transferSchema)), "pay.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := p.InputSchema("pay", "transfer")
	if s == nil {
		t.Fatal("pay/transfer declares an input_schema; the policy has none for it")
	}
	var doc map[string]any
	if err := json.Unmarshal(s.JSON(), &doc); err != nil || doc["type"] != "object" || doc["required"] == nil {
		t.Fatalf("schema JSON %s: %v", s.JSON(), err)
	}
	if err := s.Validate(json.RawMessage(`{"amount":5,"currency":"USD","to":"bob"}`)); err != nil {
		t.Fatalf("valid arguments refused: %v", err)
	}
	for _, bad := range []string{
		`{"amount":"5","currency":"USD","to":"bob"}`,        // wrong type
		`{"amount":5,"currency":"USD"}`,                     // missing member
		`{"amount":5,"currency":"GBP","to":"bob"}`,          // not in enum
		`{"amount":5,"currency":"USD","to":"bob","x":true}`, // additional member
		`[1,2]`, // not an object
	} {
		err := s.Validate(json.RawMessage(bad))
		if !errors.Is(err, policy.ErrInvalidArguments) || !strings.Contains(err.Error(), "inputSchema") {
			t.Errorf("%s: err = %v; want ErrInvalidArguments", bad, err)
		}
	}
	if p.InputSchema("pay", "refund") != nil || p.InputSchema("other", "transfer") != nil {
		t.Error("a tool that declares no schema has one")
	}
	// The hash covers the schema's meaning, not its layout: the same schema
	// on one line hashes alike, a different one does not.
	oneLine := `'{"type":"object","additionalProperties":false,"required":["amount","currency","to"],"properties":{"to":{"minLength":1,"type":"string"},"amount":{"type":"integer","minimum":1},"currency":{"type":"string","enum":["USD","EUR"]}}}'`
	if q, err := policy.Parse([]byte(withSchema(oneLine)), "pay.toml"); err != nil || q.Hash != p.Hash {
		t.Errorf("the same schema laid out differently: err %v, hash %s vs %s", err, q.Hash, p.Hash)
	}
	if q, err := policy.Parse([]byte(withSchema(`'{"type":"object"}'`)), "pay.toml"); err != nil || q.Hash == p.Hash {
		t.Errorf("a different schema: err %v, same hash %v", err, q != nil && q.Hash == p.Hash)
	}
}

// A schema that cannot be used is refused at load, at its own line, so
// nothing fails open (or closed by surprise) at call time.
func TestBadInputSchemaIsRefusedAtLoad(t *testing.T) {
	big := `'{"type":"object","description":"` + strings.Repeat("x", policy.MaxInputSchemaBytes) + `"}'`
	// Each definition applies the next twice: 30 of them apply the last
	// 2^30 times to the arguments, with no recursion at all.
	var doubling strings.Builder
	doubling.WriteString(`'{"type":"object","allOf":[{"$ref":"#/$defs/d0"}],"$defs":{`)
	for i := range 30 {
		fmt.Fprintf(&doubling, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	doubling.WriteString(`"d30":{"required":["x"]}}}'`)
	cases := []struct{ name, schema, want string }{
		{"not JSON", `'{"type": "object",'`, "input_schema is not JSON"},
		{"not a JSON value", `'type: object'`, "input_schema is not JSON"},
		{"trailing data", `'{"type":"object"} {}'`, "input_schema is not JSON"},
		{"not an object", `'["type","object"]'`, `input_schema must be a JSON Schema object with "type": "object"`},
		{"not an object schema", `'{"type":"string"}'`, `input_schema must be a JSON Schema object with "type": "object"`},
		{"no type", `'{"properties":{}}'`, `input_schema must be a JSON Schema object with "type": "object"`},
		{"miscased type", `'{"Type":"object"}'`, `input_schema must be a JSON Schema object with "type": "object"`},
		{"type list", `'{"type":["object","null"]}'`, `input_schema must be a JSON Schema object with "type": "object"`},
		{"bad keyword value", `'{"type":"object","properties":{"a":{"type":"integer","minimum":"one"}}}'`, "input_schema is not a valid JSON Schema"},
		{"bad pattern", `'{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}'`, "input_schema is not a valid JSON Schema"},
		{"remote ref", `'{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}'`, "input_schema is not a valid JSON Schema"},
		{"dangling ref", `'{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}'`, "input_schema is not a valid JSON Schema"},
		{"unsupported draft", `'{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}'`, "input_schema is not a valid JSON Schema"},
		{"default breaks it", `'{"type":"object","properties":{"a":{"type":"integer","default":"x"}}}'`, "input_schema is not a valid JSON Schema"},
		{"duplicate member", `'{"type":"object","type":"object"}'`, "input_schema is not JSON"},
		{"header annotation", `'{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}'`, "x-mcp-header"},
		{"reference loop", `'{"type":"object","allOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"anyOf":[{"$ref":"#"}]}}}'`, "validation would never end"},
		{"loop under a default", `'{"type":"object","properties":{"a":{"default":1,"allOf":[{"$ref":"#/properties/a"}]}}}'`, "validation would never end"},
		{"applies itself twice per level", `'{"type":"object","properties":{"a":{"allOf":[{"$ref":"#"},{"$ref":"#"}]}}}'`, "more than once"},
		{"union of recursive variants", `'{"type":"object","properties":{"e":{"$ref":"#/$defs/expr"}},"$defs":{"expr":{"oneOf":[{"$ref":"#/$defs/sum"},{"$ref":"#/$defs/product"}]},"sum":{"type":"object","properties":{"terms":{"type":"array","items":{"$ref":"#/$defs/expr"}}}},"product":{"type":"object","properties":{"terms":{"type":"array","items":{"$ref":"#/$defs/expr"}}}}}}'`, "more than once"},
		{"definitions that double", doubling.String(), "routes"},
		{"anchor reference", `'{"type":"object","properties":{"a":{"$ref":"#n"}},"$defs":{"n":{"$anchor":"n"}}}'`, "input_schema cannot be used"},
		{"not a string", `{ type = "object" }`, "input_schema must be a string"},
		{"too large", big, "input_schema is"},
		{"empty", `''`, "input_schema is empty"},
		{"blank", `'  '`, "input_schema is not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.Parse([]byte(withSchema(c.schema)), "pay.toml")
			var perr *policy.Errors
			if !errors.As(err, &perr) || len(*perr) == 0 {
				t.Fatalf("err = %v; want it refused", err)
			}
			e := (*perr)[0]
			if e.File != "pay.toml" || e.Line != 9 || !strings.Contains(e.Msg, c.want) {
				t.Fatalf("err = %v; want pay.toml:9: …%s…", err, c.want)
			}
		})
	}
}

// input_schema is for http tools: an MCP server's tools carry their
// upstream's inputSchema and a builtin tool its own, so a declared one
// there would be shown nowhere and checked nowhere.
func TestInputSchemaOnlyOnHTTPTools(t *testing.T) {
	for _, server := range []string{
		"[[servers]]\nid = \"pay\"\ntransport = \"builtin\"\n",
		"[[servers]]\nid = \"pay\"\ntransport = \"mcp\"\nurl = \"https://mcp.example.com/mcp\"\n",
	} {
		doc := server + "\n[[servers.tools]]\nname = \"echo\"\ninput_schema = '{\"type\":\"object\"}'\n"
		_, err := policy.Parse([]byte(doc), "t.toml")
		line := strings.Count(doc[:strings.Index(doc, "input_schema")], "\n") + 1
		want := fmt.Sprintf("t.toml:%d: input_schema is for tools of http servers", line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v", server, err)
		}
	}
}
