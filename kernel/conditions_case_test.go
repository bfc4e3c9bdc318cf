package kernel

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// A condition reads argument names exactly, as CEL maps do; many tools
// do not (Go's encoding/json, and other frameworks, match a struct
// field's name in any letter case). An argument named "Note" is then the
// tool's note, yet `has(args.note)` is false for it, and the deny_when
// written to stop "DROP TABLE" in the note let it through. A name a
// condition reads, sent in another letter case, must not decide a call
// by its absence: the condition cannot be decided, and that denies.
func TestConditionsSeeArgumentNamesInAnyCase(t *testing.T) {
	p, err := policy.Parse([]byte(conditionsPolicy), "conditions.toml")
	if err != nil {
		t.Fatal(err)
	}
	pl := testPipeline()
	for _, c := range []struct {
		name, args string
		want       Verdict
	}{
		{"Note", `{"amount":50,"currency":"USD","Note":"x'; DROP TABLE users"}`, Deny},
		{"NOTE", `{"amount":50,"currency":"USD","NOTE":"x'; DROP TABLE users"}`, Deny},
		// A name no condition reads, in any case, changes nothing.
		{"unrelated name", `{"amount":50,"currency":"USD","Memo":"x'; DROP TABLE users"}`, Allow},
		{"exact name", `{"amount":50,"currency":"USD","note":"fine"}`, Allow},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := pl.Evaluate(condCall(t, p, "refunds", c.args, ""), true)
			if d.Verdict != c.want {
				t.Fatalf("%s: got %v by %q (%s), want %v", c.args, d.Verdict, d.Guard, d.Reason, c.want)
			}
			if c.want == Deny && (d.Guard != GuardDenyWhen || !strings.Contains(d.Reason, "letter case")) {
				t.Fatalf("%s: denied by %q (%s), want deny_when naming the letter case", c.args, d.Guard, d.Reason)
			}
		})
	}

	// Inside a list, through a macro's variable, as at the top.
	lines := strings.Replace(conditionsPolicy, `"has(args.note) && args.note.contains('DROP TABLE')",`,
		`"has(args.lines) && args.lines.exists(l, has(l.note) && l.note.contains('DROP TABLE'))",`, 1)
	p, err = policy.Parse([]byte(lines), "lines.toml")
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]Verdict{
		`{"amount":50,"currency":"USD","lines":[{"Note":"DROP TABLE users"}]}`: Deny,
		`{"amount":50,"currency":"USD","lines":[{"note":"fine"}]}`:             Allow,
	} {
		if d := pl.Evaluate(condCall(t, p, "refunds", args, ""), true); d.Verdict != want {
			t.Errorf("%s: got %v by %q (%s), want %v", args, d.Verdict, d.Guard, d.Reason, want)
		}
	}
}
