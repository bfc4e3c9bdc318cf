package kernel

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/policy"
)

const conditionsPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9001"
# no amount pointer: the conditions alone read the arguments here
[[servers.tools]]
name = "refund"

[[grants]]
id = "refunds"
server = "pay"
tool = "refund"
[grants.constraints]
deny_when = [
  "args.currency != 'USD'",
  "has(args.note) && args.note.contains('DROP TABLE')",
]
require_approval_when = [
  "args.amount >= 10000",
  "intent != null && intent.purpose.startsWith('urgent')",
]
[grants.approval]
[[grants.approval.approvers]]
public_key = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
display_name = "A"

[[grants]]
id = "who"
server = "pay"
tool = "refund"
[grants.constraints]
deny_when = "server != 'pay' || tool != 'refund' || subject == 'ed25519:264f3c00fa147d83e3a89432b2385a42a28b76f2f685838a111c86d28d5d7588'"

[[grants]]
id = "strict"
server = "pay"
tool = "refund"
[grants.constraints]
deny_when = "args.missing == 1"

[[grants]]
id = "costly"
server = "pay"
tool = "refund"
[grants.constraints]
deny_when = "args.items.exists(x, args.items.exists(y, x == y + 100000))"

[[grants]]
id = "long"
server = "pay"
tool = "refund"
[grants.constraints]
deny_when = "args.amount > 0 && args.amount > 1 && args.amount > 2 && args.amount > 3 && args.amount > 4 && args.amount > 5"
`

// condCall is a call to pay/refund under the named grant of conditionsPolicy.
func condCall(t *testing.T, p *policy.Policy, grant, args, intent string) *Request {
	t.Helper()
	g, ok := p.Grant(grant)
	if !ok {
		t.Fatalf("no grant %q", grant)
	}
	tool, _ := p.Tool("pay", "refund")
	call := &ToolCall{Server: "pay", Tool: "refund", Arguments: json.RawMessage(args)}
	var gi *GovernedIntent
	if intent != "" {
		call.GovernedIntent = json.RawMessage(intent)
		var err error
		if gi, err = parseIntent(call.GovernedIntent); err != nil {
			t.Fatal(err)
		}
	}
	return &Request{Policy: p, Grant: g, Tool: tool, Call: call, Operation: "invoke",
		Subject: "ed25519:agent", Intent: gi, Now: time.Unix(1000, 0)}
}

func TestArgumentConditions(t *testing.T) {
	p, err := policy.Parse([]byte(conditionsPolicy), "conditions.toml")
	if err != nil {
		t.Fatal(err)
	}
	many := `{"amount":1,"currency":"USD","items":[` + strings.TrimSuffix(strings.Repeat("1,", 3000), ",") + `]}`
	cases := []struct {
		name, grant, args, intent string
		want                      Verdict
		guard                     string // the deciding guard, or the first trigger
		reason                    string
	}{
		{"nothing true", "refunds", `{"amount":50,"currency":"USD"}`, "", Allow, "", ""},
		{"deny_when true", "refunds", `{"amount":50,"currency":"EUR"}`, "", Deny, GuardDenyWhen,
			"grant \"refunds\": deny_when[0] `args.currency != 'USD'` is true"},
		{"the second deny_when", "refunds", `{"amount":50,"currency":"USD","note":"x'; DROP TABLE users"}`, "", Deny, GuardDenyWhen, "deny_when[1]"},
		{"require_approval_when true", "refunds", `{"amount":10000,"currency":"USD"}`, "", PendingApproval, GuardApprovalWhen,
			"grant \"refunds\": require_approval_when[0] `args.amount >= 10000` is true"},
		{"a whole number in any spelling", "refunds", `{"amount":1e4,"currency":"USD"}`, "", PendingApproval, GuardApprovalWhen, "require_approval_when[0]"},
		{"over the intent", "refunds", `{"amount":5,"currency":"USD"}`, `{"purpose":"urgent: customer waiting"}`, PendingApproval, GuardApprovalWhen, "require_approval_when[1]"},
		{"both approval conditions are named", "refunds", `{"amount":20000,"currency":"USD"}`, `{"purpose":"urgent"}`, PendingApproval, GuardApprovalWhen,
			"require_approval_when[0] `args.amount >= 10000`, require_approval_when[1]"},
		{"deny dominates a true approval condition", "refunds", `{"amount":20000,"currency":"EUR"}`, "", Deny, GuardDenyWhen, "deny_when[0]"},
		{"an approval condition that cannot be evaluated denies", "refunds", `{"currency":"USD"}`, "", Deny, GuardApprovalWhen,
			"require_approval_when[0] `args.amount >= 10000` could not be evaluated (no such key: amount)"},
		{"an approval condition of the wrong type denies", "refunds", `{"amount":"lots","currency":"USD"}`, "", Deny, GuardApprovalWhen, "could not be evaluated"},
		{"one true, one failing: deny", "refunds", `{"amount":"x","currency":"USD"}`, `{"purpose":"urgent"}`, Deny, GuardApprovalWhen, "could not be evaluated"},
		{"tool, server and subject are visible", "who", `{"amount":1,"currency":"USD"}`, "", Allow, "", ""},
		{"a missing key denies", "strict", `{"amount":1,"currency":"USD"}`, "", Deny, GuardDenyWhen, "deny_when[0] `args.missing == 1` could not be evaluated (no such key: missing)"},
		{"the cost limit denies", "costly", many, "", Deny, GuardDenyWhen, "cost"},
		{"a long expression is shortened in the reason", "long", `{"amount":9,"currency":"USD"}`, "", Deny, GuardDenyWhen, "args.amount > 3 && args…` is true"},
	}
	pl := testPipeline()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := pl.Evaluate(condCall(t, p, c.grant, c.args, c.intent), true)
			got := d.Guard
			if d.Verdict == PendingApproval {
				got = d.TriggeredBy[0]
			}
			if d.Verdict != c.want || got != c.guard || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("got %v by %q: %s\nwant %v by %q: …%s…", d.Verdict, got, d.Reason, c.want, c.guard, c.reason)
			}
		})
	}
}

// On resume the approval triggers are skipped (a human has answered them);
// deny_when runs again, as every non-approval guard does.
func TestConditionsOnResume(t *testing.T) {
	p, err := policy.Parse([]byte(conditionsPolicy), "conditions.toml")
	if err != nil {
		t.Fatal(err)
	}
	pl := testPipeline()
	if d := pl.Evaluate(condCall(t, p, "refunds", `{"amount":20000,"currency":"USD"}`, ""), false); d.Verdict != Allow {
		t.Fatalf("resume re-asked: %+v", d)
	}
	if d := pl.Evaluate(condCall(t, p, "refunds", `{"amount":20000,"currency":"EUR"}`, ""), false); d.Verdict != Deny || d.Guard != GuardDenyWhen {
		t.Fatalf("resume skipped deny_when: %+v", d)
	}
}

// A grant whose expressions were never compiled (a Policy not built by
// policy.Parse) must not pass them by.
func TestUncompiledConditionsDeny(t *testing.T) {
	pl := testPipeline()
	for _, c := range []struct {
		name  string
		cons  policy.Constraints
		guard string
	}{
		{"deny_when", policy.Constraints{DenyWhen: []string{"false"}}, GuardDenyWhen},
		{"require_approval_when", policy.Constraints{RequireApprovalWhen: []string{"false"}}, GuardApprovalWhen},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := pl.Evaluate(req(grantWith(c.cons), `{}`, nil), true)
			if d.Verdict != Deny || d.Guard != c.guard || !strings.Contains(d.Reason, "was not compiled") {
				t.Fatalf("got %+v", d)
			}
		})
	}
}

// examples/policies/payments-guarded.toml does what its comments say.
func TestPaymentsGuardedExample(t *testing.T) {
	p, err := policy.Load("../examples/policies/payments-guarded.toml")
	if err != nil {
		t.Fatal(err)
	}
	call := func(grant, server, tool, args, intent string) *Request {
		g, _ := p.Grant(grant)
		tl, _ := p.Tool(server, tool)
		c := &ToolCall{Server: server, Tool: tool, Arguments: json.RawMessage(args)}
		var gi *GovernedIntent
		if intent != "" {
			c.GovernedIntent = json.RawMessage(intent)
			gi, _ = parseIntent(c.GovernedIntent)
		}
		return &Request{Policy: p, Grant: g, Tool: tl, Call: c, Operation: "invoke", Subject: "ed25519:agent", Intent: gi, Now: time.Unix(1, 0)}
	}
	const purpose = `{"purpose":"refund for order #8834"}`
	cases := []struct {
		name  string
		r     *Request
		want  Verdict
		guard string
	}{
		{"small USD refund", call("refunds", "payments", "issue_refund", `{"customer_id":"c-1","amount":1999,"currency":"USD"}`, purpose), Allow, ""},
		{"$450.00 refund", call("refunds", "payments", "issue_refund", `{"customer_id":"c-1","amount":45000,"currency":"USD"}`, purpose), PendingApproval, GuardApprovalAbove},
		{"euro refund", call("refunds", "payments", "issue_refund", `{"customer_id":"c-1","amount":1,"currency":"EUR"}`, purpose), Deny, GuardDenyWhen},
		{"injection in a note", call("refunds", "payments", "issue_refund", `{"customer_id":"c-1","amount":1,"currency":"USD","note":"x; Drop  Table t"}`, purpose), Deny, GuardDenyWhen},
		{"VIP customer", call("refunds", "payments", "issue_refund", `{"customer_id":"vip-7","amount":1,"currency":"USD"}`, purpose), PendingApproval, GuardApprovalWhen},
		{"vague purpose", call("refunds", "payments", "issue_refund", `{"customer_id":"c-1","amount":1,"currency":"USD"}`, `{"purpose":"refund"}`), PendingApproval, GuardApprovalWhen},
		{"invoice in EUR below the line", call("invoices", "payments", "pay_invoice", `{"invoice":{"total":5000,"currency":"EUR"}}`, `{"purpose":"p"}`), Allow, ""},
		{"invoice in USD asks", call("invoices", "payments", "pay_invoice", `{"invoice":{"total":5000,"currency":"USD"}}`, `{"purpose":"p"}`), PendingApproval, GuardApprovalAbove},
		{"invoice with a large line", call("invoices", "payments", "pay_invoice", `{"invoice":{"total":5000,"currency":"EUR"},"lines":[{"amount":60000}]}`, `{"purpose":"p"}`), Deny, GuardDenyWhen},
		{"report in place", call("reports", "reports", "export_report", `{"out":"/srv/reports/q1.csv"}`, ""), Allow, ""},
		{"report outside", call("reports", "reports", "export_report", `{"out":"/tmp/q1.csv"}`, ""), Deny, GuardAllowedPaths},
		{"report into private", call("reports", "reports", "export_report", `{"out":"/srv/reports/private/q1.csv"}`, ""), Deny, GuardForbiddenPaths},
	}
	pl := testPipeline()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := pl.Evaluate(c.r, true)
			got := d.Guard
			if d.Verdict == PendingApproval {
				got = d.TriggeredBy[0]
			}
			if d.Verdict != c.want || got != c.guard {
				t.Fatalf("got %v by %q: %s; want %v by %q", d.Verdict, got, d.Reason, c.want, c.guard)
			}
		})
	}
}

// FuzzConditions: no arguments make a condition guard panic or answer
// anything but a verdict naming its own guard.
func FuzzConditions(f *testing.F) {
	p, err := policy.Parse([]byte(conditionsPolicy), "conditions.toml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`{"amount":50,"currency":"USD"}`, `{"amount":1e4,"currency":"EUR","note":"DROP TABLE"}`,
		`{"amount":"x"}`, `{"items":[1,2,3]}`, `{}`, `{"amount":null,"currency":[]}`} {
		f.Add([]byte(s), "refunds")
		f.Add([]byte(s), "costly")
	}
	pl := testPipeline()
	f.Fuzz(func(t *testing.T, args []byte, grant string) {
		g, ok := p.Grant(grant)
		if !ok || !json.Valid(args) {
			return
		}
		tool, _ := p.Tool("pay", "refund")
		r := &Request{Policy: p, Grant: g, Tool: tool, Call: &ToolCall{Server: "pay", Tool: "refund", Arguments: args},
			Operation: "invoke", Subject: "ed25519:agent", Now: time.Unix(1, 0)}
		d := pl.Evaluate(r, true)
		if strings.Contains(d.Reason, "panicked") || d.Verdict == Deny && d.Guard != GuardDenyWhen && d.Guard != GuardApprovalWhen {
			t.Fatalf("%s: %+v", args, d)
		}
	})
}
