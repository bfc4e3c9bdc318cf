package policy

import (
	"strings"
	"testing"
)

// evalCond compiles expr as a deny_when and runs it over args.
func evalCond(t *testing.T, expr string, args map[string]any, intent any) (bool, error) {
	t.Helper()
	c, err := compileCondition(KindDenyWhen, 0, expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return c.Eval(&ConditionInput{Args: args, Intent: intent, Tool: "t", Server: "s", Subject: "ed25519:a"})
}

// ==, != and `in` on operands of different types are evaluation errors
// naming both types; numbers of any kind and null compare as in CEL.
func TestConditionComparisonsAreStrict(t *testing.T) {
	list := func(v ...any) []any { return v }
	for _, c := range []struct {
		expr string
		args map[string]any
		want bool   // when err is ""
		err  string // the error's text, or "" for none
	}{
		// Same types, and numbers of any kind.
		{"args.x == true", map[string]any{"x": true}, true, ""},
		{"args.x == 1", map[string]any{"x": 1.0}, true, ""},
		{"args.x == 1.0", map[string]any{"x": int64(1)}, true, ""},
		{"args.x == 1u", map[string]any{"x": int64(1)}, true, ""},
		{"args.x != 2", map[string]any{"x": 2.5}, true, ""},
		{"args.x == args.y", map[string]any{"x": "a", "y": "a"}, true, ""},
		{"type(args.x) == string", map[string]any{"x": true}, false, ""},
		// null on either side.
		{"args.x == null", map[string]any{"x": nil}, true, ""},
		{"args.x == null", map[string]any{"x": "a"}, false, ""},
		{"args.x != null", map[string]any{"x": list("a")}, true, ""},
		{"null == args.x", map[string]any{"x": 0}, false, ""},
		{"intent == null", nil, true, ""},
		// Mismatches.
		{"args.x == true", map[string]any{"x": "true"}, false, "type mismatch: == compares string with bool"},
		{"args.x == true", map[string]any{"x": int64(1)}, false, "type mismatch: == compares int with bool"},
		{"args.x != 'USD'", map[string]any{"x": int64(840)}, false, "type mismatch: != compares int with string"},
		{"args.x == 'a'", map[string]any{"x": map[string]any{"a": 1}}, false, "type mismatch: == compares map with string"},
		{"args.x.exists(e, e == 'a')", map[string]any{"x": list("b", int64(1))}, false, "type mismatch: == compares int with string"},
		// Lists and maps compared pairwise.
		{"args.x == ['a', 1]", map[string]any{"x": list("a", 1.0)}, true, ""},
		{"args.x == ['a']", map[string]any{"x": list("a", "b")}, false, ""},
		{"args.x == ['true']", map[string]any{"x": list(true)}, false, "type mismatch: == compares bool with string"},
		{"args.x == {'k': 'v'}", map[string]any{"x": map[string]any{"k": "v"}}, true, ""},
		{"args.x == {'k': 'v'}", map[string]any{"x": map[string]any{"k": false}}, false, "type mismatch: == compares bool with string"},
		// `in` over a constant list, a list argument, and maps.
		{"args.x in ['prod', 'production']", map[string]any{"x": "prod"}, true, ""},
		{"args.x in ['prod', 'production']", map[string]any{"x": "dev"}, false, ""},
		{"args.x in ['prod', 'production']", map[string]any{"x": list("prod")}, false, "type mismatch: `in` compares list with string"},
		{"args.x in ['prod', 'production']", map[string]any{"x": true}, false, "type mismatch: `in` compares bool with string"},
		{"args.x in [1, 2]", map[string]any{"x": 2.0}, true, ""},
		{"args.x in ['a', null]", map[string]any{"x": "b"}, false, ""},
		{"args.x in ['a']", map[string]any{"x": nil}, false, ""},
		{"args.x in args.y", map[string]any{"x": "b", "y": list("a", "b")}, true, ""},
		{"args.x in args.y", map[string]any{"x": "b", "y": list(int64(1), "b")}, false, "type mismatch: `in` compares string with int"},
		{"args.x in args.y", map[string]any{"x": "b", "y": map[string]any{"b": 1}}, true, ""},
		{"args.x in args.y", map[string]any{"x": int64(1), "y": map[string]any{"1": 1}}, false, "type mismatch: `in` compares int with string"},
		{"args.x in {'acme': 1}", map[string]any{"x": "acme"}, true, ""},
		{"args.x in {'acme': 1}", map[string]any{"x": false}, false, "type mismatch: `in` compares bool with string"},
		{"args.x in args.y", map[string]any{"x": "b", "y": "abc"}, false, "no such overload"},
	} {
		got, err := evalCond(t, c.expr, c.args, nil)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s with %v: %v", c.expr, c.args, err)
		case c.err == "" && got != c.want:
			t.Errorf("%s with %v: %v, want %v", c.expr, c.args, got, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s with %v: %v, %v; want the error %q", c.expr, c.args, got, err, c.err)
		}
	}
}

// The checked `in` is charged the size of what it walks, so the cost limit
// still bounds a comprehension over `in`, for maps as for lists.
func TestConditionInIsCosted(t *testing.T) {
	keys := map[string]any{}
	var elems []any
	for i := range 2000 {
		s := strings.Repeat("k", 1+i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		keys[s] = true
		elems = append(elems, s)
	}
	// 200 iterations of a cheap body stay far below the limit; 200 walks
	// of 2,000 entries do not.
	args := map[string]any{"l": elems[:200], "big": elems, "m": keys}
	for _, expr := range []string{"args.l.exists(x, x in args.m && false)", "args.l.exists(x, x in args.big && false)"} {
		_, err := evalCond(t, expr, args, nil)
		if err == nil || !strings.Contains(err.Error(), "cost limit") {
			t.Errorf("%s: %v; want the cost limit", expr, err)
		}
	}
}
