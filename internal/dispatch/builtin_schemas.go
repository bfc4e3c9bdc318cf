package dispatch

import "encoding/json"

// BuiltinDescription is how a builtin tool presents itself to an agent's
// MCP client (internal/mcpgw offers it): what it does and the JSON Schema
// of its arguments. Each schema states what the tool's decoder accepts —
// members, types, what is required, bounds — for the tools run here
// (tools.go) and for the confirm / ask verbs the kernel answers
// (approval.ParseConfirm, ParseAsk); builtin_schemas_test.go holds them to
// it. The tool and the kernel stay the judges: a rule a schema cannot say
// ("no .. in a path", a prompt's bytes) is still refused by them.
type BuiltinDescription struct {
	Description string
	InputSchema json.RawMessage
}

// Builtin describes the builtin tool name; false for a name that is none.
func Builtin(name string) (BuiltinDescription, bool) {
	d, ok := builtinDescriptions[name]
	return d, ok
}

var builtinDescriptions = map[string]BuiltinDescription{
	"echo": {
		Description: `Demo tool: returns its arguments, as {"echo": <arguments>}.`,
		InputSchema: json.RawMessage(`{"type":"object"}`),
	},
	"issue_refund": {
		Description: "Demo tool: refunds amount in currency to customer_id, once per call (recorded in chiod's demo ledger).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"customer_id":{"type":"string","minLength":1,"maxLength":128},` +
			`"amount":{"type":"number","exclusiveMinimum":0,"maximum":1000000000},` +
			`"currency":{"type":"string","pattern":"^[A-Z]{3}$","description":"ISO 4217 code, e.g. USD"}},` +
			`"required":["customer_id","amount","currency"],"additionalProperties":false}`),
	},
	"delete_file": {
		Description: "Demo tool: deletes one file of chiod's demo sandbox.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"path":{"type":"string","minLength":1,"description":"the file, taken inside the sandbox (/etc/passwd is the sandbox's etc/passwd); .. is refused"}},` +
			`"required":["path"],"additionalProperties":false}`),
	},
	"confirm": {
		Description: "Asks a human a yes/no question. The call is parked until an approver answers: " +
			`yes returns {"confirmed": true, "approver", "note"}, no is a denial.`,
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"prompt":{"type":"string","minLength":1,"description":"the question, one line of at most 2000 bytes"},` +
			`"details":{"description":"any JSON, shown to the approver"}},` +
			`"required":["prompt"],"additionalProperties":false}`),
	},
	"ask": {
		Description: "Asks a human to fill in a small form. The call is parked until an approver answers: " +
			`the result is {"answers": {<question id>: <answer>}, "approver"}.`,
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"prompt":{"type":"string","description":"one line of at most 2000 bytes"},` +
			`"questions":{"type":"array","minItems":1,"maxItems":20,"items":{"type":"object","properties":{` +
			`"id":{"type":"string","minLength":1,"description":"unique, ignoring letter case; at most 64 bytes"},` +
			`"text":{"type":"string","minLength":1,"description":"one line of at most 1000 bytes"},` +
			`"type":{"enum":["text","single","multi"]},` +
			`"options":{"type":"array","items":{"type":"string"},"maxItems":50,"description":"1 to 50, for single and multi"},` +
			`"allow_other":{"type":"boolean"}},` +
			`"required":["id","text","type"],"additionalProperties":false}}},` +
			`"required":["questions"],"additionalProperties":false}`),
	},
}
