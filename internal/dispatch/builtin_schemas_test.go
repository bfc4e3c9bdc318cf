package dispatch

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
)

// accepts reports whether the builtin tool's own decoder takes args (the
// part of its checks a schema can state).
func accepts(tool string, args string) bool {
	raw := json.RawMessage(args)
	switch tool {
	case "echo":
		_, toolErr, err := echo(raw)
		return err == nil && toolErr == ""
	case "issue_refund":
		var a refundArgs
		return decodeStrict(raw, &a) == nil && a.validate() == nil
	case "delete_file":
		var a deleteArgs
		return decodeStrict(raw, &a) == nil && a.Path != ""
	case policy.ToolConfirm:
		_, err := approval.ParseConfirm(raw)
		return err == nil
	case policy.ToolAsk:
		_, err := approval.ParseAsk(raw)
		return err == nil
	}
	panic(tool)
}

// Every builtin tool is described, and its schema agrees with its decoder:
// what one accepts the other does, what one refuses the other does.
func TestBuiltinSchemasAgreeWithTheTools(t *testing.T) {
	p, err := policy.Parse([]byte("[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n"), "builtin.toml")
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range p.Tools("demo") {
		d, ok := Builtin(tool.Name)
		if !ok || d.Description == "" {
			t.Fatalf("builtin tool %q is not described", tool.Name)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(d.InputSchema, &s); err != nil || s.Type != "object" {
			t.Fatalf("%s: schema %s: %v", tool.Name, d.InputSchema, err)
		}
		if schemas[tool.Name], err = s.Resolve(nil); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
	}
	if len(schemas) != len(builtinDescriptions) {
		t.Fatalf("%d builtin tools, %d descriptions", len(schemas), len(builtinDescriptions))
	}
	q := `{"id":"q","text":"Which?","type":"single","options":["a","b"]}`
	cases := []struct {
		tool, args string
		ok         bool
	}{
		{"echo", `{}`, true},
		{"echo", `{"anything":[1,{"x":null}]}`, true},
		{"issue_refund", `{"customer_id":"c-1","amount":450,"currency":"USD"}`, true},
		{"issue_refund", `{"customer_id":"c-1","amount":0.5,"currency":"EUR"}`, true},
		{"issue_refund", `{"customer_id":"c-1","amount":450}`, false},
		{"issue_refund", `{"customer_id":"","amount":450,"currency":"USD"}`, false},
		{"issue_refund", `{"customer_id":"c-1","amount":0,"currency":"USD"}`, false},
		{"issue_refund", `{"customer_id":"c-1","amount":-3,"currency":"USD"}`, false},
		{"issue_refund", `{"customer_id":"c-1","amount":1000000001,"currency":"USD"}`, false},
		{"issue_refund", `{"customer_id":"c-1","amount":"450","currency":"USD"}`, false},
		{"issue_refund", `{"customer_id":"c-1","amount":450,"currency":"usd"}`, false},
		{"issue_refund", `{"customer_id":"c-1","amount":450,"currency":"USD","note":"x"}`, false},
		{"delete_file", `{"path":"notes/todo.txt"}`, true},
		{"delete_file", `{"path":""}`, false},
		{"delete_file", `{}`, false},
		{"delete_file", `{"path":"a","force":true}`, false},
		{"delete_file", `{"path":7}`, false},
		{"confirm", `{"prompt":"Deploy?"}`, true},
		{"confirm", `{"prompt":"Deploy?","details":{"env":"prod"}}`, true},
		{"confirm", `{"prompt":""}`, false},
		{"confirm", `{"details":{}}`, false},
		{"confirm", `{"prompt":"Deploy?","extra":1}`, false},
		{"ask", `{"questions":[` + q + `]}`, true},
		{"ask", `{"prompt":"Form","questions":[{"id":"n","text":"Name?","type":"text"},` + q + `]}`, true},
		{"ask", `{"questions":[]}`, false},
		{"ask", `{"prompt":"Form"}`, false},
		{"ask", `{"questions":[{"id":"n","text":"Name?","type":"essay"}]}`, false},
		{"ask", `{"questions":[{"id":"n","type":"text"}]}`, false},
		{"ask", `{"questions":[{"id":"n","text":"Name?","type":"text","hint":"x"}]}`, false},
	}
	for _, c := range cases {
		var v any
		if err := json.Unmarshal([]byte(c.args), &v); err != nil {
			t.Fatal(err)
		}
		bySchema := schemas[c.tool].Validate(v) == nil
		byTool := accepts(c.tool, c.args)
		if bySchema != c.ok || byTool != c.ok {
			t.Errorf("%s %s: schema accepts %v, tool accepts %v; want %v", c.tool, c.args, bySchema, byTool, c.ok)
		}
	}
}
