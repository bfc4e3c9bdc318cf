package cli_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A tool's output may hold characters that act on a terminal or draw
// invisibly: a right-to-left override (U+202E) that reorders the rest of
// the line, a zero-width space, a private-use character, a C1 control
// (U+0085, U+009B: the one-byte CSI of some terminals), DEL. JSON encoding
// escapes C0 controls only, so `chio call` and `chio await` printed these
// raw. They are now written as JSON \u escapes inside the strings that
// hold them: what is printed is still JSON, equal in value to the tool's
// output, in every output mode.
func TestCallAndAwaitEscapeTheToolOutput(t *testing.T) {
	w := newApprovalWorld(t)
	env := map[string]string{"CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	const args = "{\"iban\":\"DE89 \u202e3704 0044\",\"memo\":\"a\u200bb \ue000 \u0085\u009b2J \x7f \U000F0001\",\"ok\":\"Zahlung €, 退款, שלום\"}"
	const bad = "\u202e\u200b\ue000\u0085\u009b\x7f\U000F0001"
	var want any
	if err := json.Unmarshal([]byte(`{"echo":`+args+`}`), &want); err != nil {
		t.Fatal(err)
	}
	// check: stdout holds none of bad, and its JSON (at path) equals want.
	check := func(what, stdout string, path ...string) {
		t.Helper()
		if i := strings.IndexAny(stdout, bad); i >= 0 {
			t.Errorf("%s printed %U raw:\n%q", what, []rune(stdout[i:])[0], stdout)
			return
		}
		var got any
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Errorf("%s printed what is not JSON (%v):\n%s", what, err, stdout)
			return
		}
		for _, p := range path {
			got = got.(map[string]any)[p]
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s printed %v, want %v", what, got, want)
		}
	}
	id := "req-cli-escape-1"
	so, se, code := w.run(env, "call", "demo", "echo", "--args", args, "--request-id", id)
	if code != cli.ExitOK {
		t.Fatalf("call: exit %d: %s", code, se)
	}
	check("chio call", so)
	for _, mode := range []string{"json", "jsonl"} {
		so, se, code := w.run(env, "call", "demo", "echo", "--args", args, "--request-id", id, "--output", mode)
		if code != cli.ExitOK {
			t.Fatalf("call --output %s: exit %d: %s", mode, code, se)
		}
		check("chio call --output "+mode, so, "output")
	}
	so, se, code = w.run(env, "await", id)
	if code != cli.ExitOK {
		t.Fatalf("await: exit %d: %s", code, se)
	}
	check("chio await", so)
	for _, mode := range []string{"json", "jsonl"} {
		so, se, code := w.run(env, "await", id, "--output", mode)
		if code != cli.ExitOK {
			t.Fatalf("await --output %s: exit %d: %s", mode, code, se)
		}
		check("chio await --output "+mode, so, "output")
	}
}
