package kernel

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// docs/platform.md ("Argument conditions") promises that a type mismatch in
// a condition is an evaluation error and therefore a deny. CEL's own
// equality is heterogeneous (`"true" == true` is false, not an error), so
// policy compiles ==, != and `in` strictly; these tests hold the kernel to
// the promise for both condition kinds.

const typedConditionsPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9001"
[[servers.tools]]
name = "refund"

[[grants]]
id = "refunds"
server = "pay"
tool = "refund"
[grants.constraints]
deny_when = ["args.force == true", "args.env in ['prod', 'production']"]

[[grants]]
id = "approvals"
server = "pay"
tool = "refund"
[grants.constraints]
require_approval_when = ["args.region != 'eu'", "args.account in {'acme': 1}"]
[grants.approval]
[[grants.approval.approvers]]
public_key = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
display_name = "A"

[[grants]]
id = "loose"
server = "pay"
tool = "refund"
[grants.constraints]
deny_when = [
  "args.amount == 100",
  "args.note == null",
  "args.tier in [1, 2.5]",
  "args.tags == ['hold']",
]
`

// A mistyped argument to a deny_when comparison denies, and the reason
// says what was compared with what.
func TestDenyWhenTypeMismatchDenies(t *testing.T) {
	p, err := policy.Parse([]byte(typedConditionsPolicy), "typed.toml")
	if err != nil {
		t.Fatal(err)
	}
	pl := testPipeline()
	// Well-typed values are denied by the condition being true.
	for _, args := range []string{`{"force":true,"env":"dev"}`, `{"force":false,"env":"prod"}`} {
		if d := pl.Evaluate(condCall(t, p, "refunds", args, ""), true); d.Verdict != Deny || !strings.Contains(d.Reason, "is true") {
			t.Fatalf("well typed %s: %+v", args, d)
		}
	}
	// Well-typed values that match nothing are allowed.
	if d := pl.Evaluate(condCall(t, p, "refunds", `{"force":false,"env":"dev"}`, ""), true); d.Verdict != Allow {
		t.Fatalf("well typed, no match: %+v", d)
	}
	for _, c := range []struct{ args, reason string }{
		{`{"force":"true","env":"dev"}`, "== compares string with bool"},
		{`{"force":1,"env":"dev"}`, "== compares int with bool"},
		{`{"force":["true"],"env":"dev"}`, "== compares list with bool"},
		{`{"force":false,"env":["prod"]}`, "`in` compares list with string"},
		{`{"force":false,"env":1}`, "`in` compares int with string"},
	} {
		d := pl.Evaluate(condCall(t, p, "refunds", c.args, ""), true)
		if d.Verdict != Deny || d.Guard != GuardDenyWhen || !strings.Contains(d.Reason, "type mismatch: "+c.reason) {
			t.Errorf("%s: %v by %q: %s; want a deny_when deny naming %q", c.args, d.Verdict, d.Guard, d.Reason, c.reason)
		}
	}
}

// A require_approval_when that cannot compare its operands denies rather
// than letting the call run without a human (`!=` included: heterogeneous
// inequality would have been true here, `in` over a map false).
func TestApprovalWhenTypeMismatchDenies(t *testing.T) {
	p, err := policy.Parse([]byte(typedConditionsPolicy), "typed.toml")
	if err != nil {
		t.Fatal(err)
	}
	pl := testPipeline()
	if d := pl.Evaluate(condCall(t, p, "approvals", `{"region":"eu","account":"other"}`, ""), true); d.Verdict != Allow {
		t.Fatalf("well typed, no match: %+v", d)
	}
	for _, args := range []string{`{"region":"us","account":"other"}`, `{"region":"eu","account":"acme"}`} {
		if d := pl.Evaluate(condCall(t, p, "approvals", args, ""), true); d.Verdict != PendingApproval {
			t.Fatalf("well typed %s: %+v", args, d)
		}
	}
	for _, c := range []struct{ args, reason string }{
		{`{"region":["eu"],"account":"other"}`, "!= compares list with string"},
		{`{"region":"eu","account":7}`, "`in` compares int with string"},
	} {
		d := pl.Evaluate(condCall(t, p, "approvals", c.args, ""), true)
		if d.Verdict != Deny || d.Guard != GuardApprovalWhen || !strings.Contains(d.Reason, "type mismatch: "+c.reason) {
			t.Errorf("%s: %v by %q: %s; want a require_approval_when deny naming %q", c.args, d.Verdict, d.Guard, d.Reason, c.reason)
		}
	}
}

// What strictness leaves alone: numbers of any kind compare with each
// other, anything compares with null, and lists compare element by element.
func TestConditionComparisonsStillWork(t *testing.T) {
	p, err := policy.Parse([]byte(typedConditionsPolicy), "typed.toml")
	if err != nil {
		t.Fatal(err)
	}
	pl := testPipeline()
	for _, c := range []struct {
		args   string
		want   Verdict
		reason string
	}{
		{`{"amount":100.0,"note":"n","tier":3,"tags":[]}`, Deny, "deny_when[0]"}, // int == double
		{`{"amount":100.5,"note":"n","tier":3,"tags":[]}`, Allow, ""},
		{`{"amount":1,"note":null,"tier":3,"tags":[]}`, Deny, "deny_when[1]"},
		{`{"amount":1,"note":"n","tier":2.5,"tags":[]}`, Deny, "deny_when[2]"},
		{`{"amount":1,"note":"n","tier":1.0,"tags":[]}`, Deny, "deny_when[2]"},
		{`{"amount":1,"note":"n","tier":null,"tags":["a","b"]}`, Allow, ""}, // null `in` a list; lists of unequal size
		{`{"amount":1,"note":"n","tier":3,"tags":["hold"]}`, Deny, "deny_when[3]"},
		{`{"amount":1,"note":"n","tier":3,"tags":[true]}`, Deny, "== compares bool with string"},
		{`{"amount":"100","note":"n","tier":3,"tags":[]}`, Deny, "== compares string with int"},
		{`{"amount":1,"note":"n","tier":"1","tags":[]}`, Deny, "`in` compares string with int"},
	} {
		d := pl.Evaluate(condCall(t, p, "loose", c.args, ""), true)
		if d.Verdict != c.want || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: %v: %s; want %v naming %q", c.args, d.Verdict, d.Reason, c.want, c.reason)
		}
	}
}
