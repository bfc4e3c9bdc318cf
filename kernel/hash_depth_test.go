package kernel

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/canon"
)

// nestedObject is a JSON object whose nesting is depth (the object itself
// counts one): {"a":[[…]]}.
func nestedObject(depth int) string {
	return `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
}

// parameter_hash covers {"arguments": …, "governed_intent": …, …}: the
// arguments and intent sit one level deeper there than on their own. Every
// client hashes that object under canon's rules (ParameterHash, the Go SDK,
// the CLI, the MCP bridge, the Python and TypeScript SDKs), so a call
// chiod accepts must be one whose hash they can compute: arguments or an
// intent nested canon.MaxDepth deep are refused at the door, not hashed by
// chiod alone.
func TestCallShapeKeepsTheHashedObjectWithinMaxDepth(t *testing.T) {
	deepest, tooDeep := nestedObject(canon.MaxDepth-1), nestedObject(canon.MaxDepth)
	for _, c := range []struct {
		name         string
		args, intent string
		refused      bool
	}{
		{"arguments at MaxDepth-1", deepest, ``, false},
		{"intent at MaxDepth-1", `{}`, deepest, false},
		{"arguments at MaxDepth", tooDeep, ``, true},
		{"intent at MaxDepth", `{}`, tooDeep, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			call := &ToolCall{RequestID: "req-1", Server: "demo", Tool: "echo",
				Arguments: json.RawMessage(c.args), GovernedIntent: json.RawMessage(c.intent)}
			err := CheckCallShape(call)
			if c.refused {
				if !errors.Is(err, ErrBadCall) || !errors.Is(err, canon.ErrTooDeep) {
					_, perr := ParameterHash(call.Server, call.Tool, call.Arguments, call.GovernedIntent)
					t.Fatalf("CheckCallShape: %v, want ErrBadCall and canon.ErrTooDeep (ParameterHash: %v)", err, perr)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckCallShape: %v", err)
			}
			got, err := canonicalParameterHash(call.Server, call.Tool, call.Arguments, call.GovernedIntent)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ParameterHash(call.Server, call.Tool, call.Arguments, call.GovernedIntent)
			if err != nil || got != want {
				t.Fatalf("chiod hashes %s; ParameterHash says %s, %v", got, want, err)
			}
		})
	}
}

// nesting counts containers only outside strings, whatever the strings
// hold (brackets, escaped quotes, a trailing backslash), and agrees with
// canon's depth rule on the value one level down.
func TestNestingIgnoresStrings(t *testing.T) {
	for in, want := range map[string]int{
		`{}`:                         1,
		`"x"`:                        0,
		`{"a":"[[[{{{"}`:             1,
		`{"a":"\"[[[","b":[]}`:       2,
		`{"a":"\\","b":[[]]}`:        3,
		`{"[":{"]":["}",{"{":1}]}}`:  4,
		`[{"a":[]},[[[]]]]`:          4,
		nestedObject(canon.MaxDepth): canon.MaxDepth,
		`{"s":"` + strings.Repeat("[", 2*canon.MaxDepth) + `"}`: 1,
	} {
		if got := nesting([]byte(in)); got != want {
			t.Errorf("nesting(%.40s…) = %d, want %d", in, got, want)
		}
		wrapped := errors.Is(canon.Check([]byte(`[`+in+`]`)), canon.ErrTooDeep)
		if refused := checkHashedDepth("arguments", []byte(in)) != nil; refused != wrapped {
			t.Errorf("%.40s…: checkHashedDepth refuses %v, canon one level down %v", in, refused, wrapped)
		}
	}
}
