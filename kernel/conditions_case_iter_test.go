package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/policy"
)

// A condition may find an argument by its name without selecting it: by
// iterating over the names (`args.exists(k, k == 'force')`, all, filter,
// map, exists_one), testing names from a list (`['force'].exists(k, k in
// args)`), or comparing with a map literal (`args.opts == {'force':
// true}`). The letter-case rule (conditions_case_test.go) looked only at
// names selected, indexed or tested with a constant, so {"Force": true} —
// the tool's force to any decoder that folds case — was simply not found,
// and the call ran.
const caseIterPolicy = `
[[servers]]
id = "git"
transport = "http"
url = "http://127.0.0.1:9001"
[[servers.tools]]
name = "push"
`

func TestConditionsFindingNamesSeeThemInAnyCase(t *testing.T) {
	conds := []string{
		"args.exists(k, k == 'force')",
		"!args.all(k, k != 'force')",
		"args.exists_one(k, k == 'force')",
		"args.filter(k, k in ['force', 'purge']).size() > 0",
		"'force' in args.map(k, k)",
		"['force', 'purge'].exists(k, k in args)",
		"has(args.opts) && args.opts == {'force': true}",
	}
	src := caseIterPolicy
	for i, c := range conds {
		src += fmt.Sprintf("\n[[grants]]\nid = \"g%d\"\nserver = \"git\"\ntool = \"push\"\n[grants.constraints]\ndeny_when = %q\n", i, c)
	}
	file := filepath.Join(t.TempDir(), "case.toml")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	pl := testPipeline()
	for i, c := range conds {
		exact, other := `{"branch":"main","force":true}`, `{"branch":"main","Force":true}`
		if strings.Contains(c, "args.opts") {
			exact, other = `{"opts":{"force":true}}`, `{"opts":{"Force":true}}`
		}
		for _, a := range []struct{ args, reason string }{
			{exact, "is true"},
			{other, "letter case"},
			{strings.ReplaceAll(other, "Force", "FORCE"), "letter case"},
		} {
			d := pl.Evaluate(pushCall(t, p, fmt.Sprintf("g%d", i), a.args), true)
			if d.Verdict != Deny || d.Guard != GuardDenyWhen || !strings.Contains(d.Reason, a.reason) {
				t.Errorf("`%s` with %s: %v by %q (%s), want a deny_when deny naming %q", c, a.args, d.Verdict, d.Guard, d.Reason, a.reason)
			}
		}
		if d := pl.Evaluate(pushCall(t, p, fmt.Sprintf("g%d", i), `{"branch":"main","opts":{}}`), true); d.Verdict != Allow {
			t.Errorf("`%s` with no force: %v by %q (%s), want allow", c, d.Verdict, d.Guard, d.Reason)
		}
	}
}

// pushCall is a call to git/push under the named grant of p.
func pushCall(t *testing.T, p *policy.Policy, grant, args string) *Request {
	t.Helper()
	g, ok := p.Grant(grant)
	if !ok {
		t.Fatalf("no grant %q", grant)
	}
	tool, _ := p.Tool("git", "push")
	return &Request{Policy: p, Grant: g, Tool: tool, Operation: "invoke", Subject: "ed25519:agent", Now: time.Unix(1000, 0),
		Call: &ToolCall{Server: "git", Tool: "push", Arguments: json.RawMessage(args)}}
}

// The string literals of a condition that iterates are names it may look
// for, but a literal that is a value (a tag 'Note') must not make an
// argument "Note" one the condition reads on purpose, beside the "note" it
// selects: the note would again pass by its absence.
func TestConditionsValueLiteralDoesNotExcuseAnotherCase(t *testing.T) {
	src := caseIterPolicy + `
[[grants]]
id = "notes"
server = "git"
tool = "push"
[grants.constraints]
deny_when = "has(args.note) && args.note.contains('DROP TABLE') || args.tags.exists(t, t == 'Note')"
`
	p, err := policy.Parse([]byte(src), "notes.toml")
	if err != nil {
		t.Fatal(err)
	}
	pl := testPipeline()
	for args, reason := range map[string]string{
		`{"note":"x; DROP TABLE users","tags":[]}`: "is true",
		`{"Note":"x; DROP TABLE users","tags":[]}`: "letter case",
		`{"note":"fine","tags":["Note"]}`:          "is true",
	} {
		d := pl.Evaluate(pushCall(t, p, "notes", args), true)
		if d.Verdict != Deny || !strings.Contains(d.Reason, reason) {
			t.Errorf("%s: %v by %q (%s), want a deny naming %q", args, d.Verdict, d.Guard, d.Reason, reason)
		}
	}
	if d := pl.Evaluate(pushCall(t, p, "notes", `{"note":"fine","tags":["x"]}`), true); d.Verdict != Allow {
		t.Errorf("nothing true: %v by %q (%s), want allow", d.Verdict, d.Guard, d.Reason)
	}
}
