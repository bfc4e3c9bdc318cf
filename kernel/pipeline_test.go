package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/policy"
)

func grantWith(c policy.Constraints) *policy.Grant {
	return &policy.Grant{ID: "g", Server: "s", Tool: "t", Operations: []string{"invoke"}, Constraints: c}
}

func req(g *policy.Grant, args string, intent *GovernedIntent) *Request {
	return &Request{Grant: g, Tool: &policy.Tool{Name: "t", Category: "financial"},
		Call: &ToolCall{Server: "s", Tool: "t", Arguments: json.RawMessage(args)}, Operation: "invoke",
		Intent: intent, Now: time.Unix(1000, 0)}
}

// money is a request for a tool that declares where its amount lives,
// moving units USD.
func money(g *policy.Grant, units int64, intent *GovernedIntent) *Request {
	r := req(g, fmt.Sprintf(`{"customer_id":"c","amount":%d,"currency":"USD"}`, units), intent)
	r.Tool = &policy.Tool{Name: "t", Category: "financial", Amount: "/amount", Currency: "/currency"}
	return r
}

// withMoneyTool makes r's tool declare where its amount lives.
func (r *Request) withMoneyTool() *Request {
	r.Tool = &policy.Tool{Name: "t", Category: "financial", Amount: "/amount", Currency: "/currency"}
	return r
}

func amount(n int64) *GovernedIntent {
	return &GovernedIntent{Purpose: "p", MaxAmount: &Amount{Units: n, Currency: "USD"}}
}

func testPipeline(extra ...Guard) *Pipeline {
	var t time.Duration
	return &Pipeline{Guards: append(BuiltinGuards(), extra...), Budget: GuardBudget,
		Stopwatch: func() time.Duration { t += time.Microsecond; return t }}
}

func TestGuardsTable(t *testing.T) {
	cases := []struct {
		name    string
		r       *Request
		want    Verdict
		guard   string
		trigger string
	}{
		{"no grant denies", &Request{Call: &ToolCall{Server: "s", Tool: "t"}, Operation: "invoke"}, Deny, GuardScope, ""},
		{"plain grant allows", req(grantWith(policy.Constraints{}), `{}`, nil), Allow, "", ""},
		{"intent required, missing", req(grantWith(policy.Constraints{GovernedIntentRequired: true}), `{}`, nil), Deny, GuardIntentRequired, ""},
		{"intent required, present", req(grantWith(policy.Constraints{GovernedIntentRequired: true}), `{}`, amount(1)), Allow, "", ""},
		{"forbidden path", req(grantWith(policy.Constraints{ForbiddenPaths: []string{"/etc/**"}}), `{"path":"/etc/passwd"}`, nil), Deny, GuardForbiddenPaths, ""},
		{"forbidden path nested", req(grantWith(policy.Constraints{ForbiddenPaths: []string{"/etc/**"}}), `{"a":[{"b":"/etc/shadow"}]}`, nil), Deny, GuardForbiddenPaths, ""},
		{"forbidden path via dotdot", req(grantWith(policy.Constraints{ForbiddenPaths: []string{"/etc/**"}}), `{"path":"/tmp/../etc/passwd"}`, nil), Deny, GuardForbiddenPaths, ""},
		{"forbidden path relative", req(grantWith(policy.Constraints{ForbiddenPaths: []string{"/etc/**"}}), `{"path":"etc/passwd"}`, nil), Deny, GuardForbiddenPaths, ""},
		{"allowed path", req(grantWith(policy.Constraints{ForbiddenPaths: []string{"/etc/**"}}), `{"path":"/tmp/x"}`, nil), Allow, "", ""},
		{"rate limit exceeded", func() *Request {
			r := req(grantWith(policy.Constraints{MaxCallsPerMinute: 2}), `{}`, nil)
			r.RecentCalls = 3
			return r
		}(), Deny, GuardRateLimit, ""},
		{"rate limit at max", func() *Request {
			r := req(grantWith(policy.Constraints{MaxCallsPerMinute: 2}), `{}`, nil)
			r.RecentCalls = 2
			return r
		}(), Allow, "", ""},
		{"above threshold pends", money(grantWith(policy.Constraints{RequireApprovalAbove: &policy.Threshold{ThresholdUnits: 200, Currency: "USD"}}), 450, amount(450)), PendingApproval, "", GuardApprovalAbove},
		{"at threshold pends", money(grantWith(policy.Constraints{RequireApprovalAbove: &policy.Threshold{ThresholdUnits: 200, Currency: "USD"}}), 200, amount(200)), PendingApproval, "", GuardApprovalAbove},
		{"below threshold allows", money(grantWith(policy.Constraints{RequireApprovalAbove: &policy.Threshold{ThresholdUnits: 200, Currency: "USD"}}), 199, amount(199)), Allow, "", ""},
		// A threshold that names no currency (only a policy built in Go
		// can carry one; the loader refuses it) compares nothing: 199
		// BTC is not "below 200" of an unknown currency.
		{"threshold without currency asks a human", req(grantWith(policy.Constraints{RequireApprovalAbove: &policy.Threshold{ThresholdUnits: 200}}),
			`{"amount":199,"currency":"BTC"}`, &GovernedIntent{Purpose: "x"}).withMoneyTool(), PendingApproval, "", GuardApprovalAbove},
		{"threshold without intent fails closed", money(grantWith(policy.Constraints{RequireApprovalAbove: &policy.Threshold{ThresholdUnits: 200, Currency: "USD"}}), 1, nil), Deny, GuardApprovalAbove, ""},
		{"threshold intent without max_amount reads the arguments", money(grantWith(policy.Constraints{RequireApprovalAbove: &policy.Threshold{ThresholdUnits: 200, Currency: "USD"}}), 450, &GovernedIntent{Purpose: "x"}), PendingApproval, "", GuardApprovalAbove},
		{"always pends", req(grantWith(policy.Constraints{RequireApprovalAlways: true}), `{}`, nil), PendingApproval, "", GuardApprovalAlways},
		{"first n pends", req(grantWith(policy.Constraints{RequireApprovalFirstN: 2}), `{}`, nil), PendingApproval, "", GuardApprovalFirstN},
		{"first n exhausted allows", func() *Request {
			r := req(grantWith(policy.Constraints{RequireApprovalFirstN: 2}), `{}`, nil)
			r.PriorCalls = 2
			return r
		}(), Allow, "", ""},
		{"category pends", req(grantWith(policy.Constraints{RequireApprovalForActions: []string{"financial"}}), `{}`, nil), PendingApproval, "", GuardApprovalActions},
		{"other category allows", req(grantWith(policy.Constraints{RequireApprovalForActions: []string{"infrastructure"}}), `{}`, nil), Allow, "", ""},
		{"undeclared tool has no category: asks", func() *Request {
			r := req(grantWith(policy.Constraints{RequireApprovalForActions: []string{"infrastructure"}}), `{}`, nil)
			r.Tool = nil
			return r
		}(), PendingApproval, "", GuardApprovalActions},
		{"agent-declared category asks", req(grantWith(policy.Constraints{RequireApprovalForActions: []string{"infrastructure"}}), `{}`,
			&GovernedIntent{Purpose: "p", ActionCategory: "infrastructure"}), PendingApproval, "", GuardApprovalActions},
		{"forbidden path in an object key", req(grantWith(policy.Constraints{ForbiddenPaths: []string{"/etc/**"}}), `{"/etc/shadow":true}`, nil), Deny, GuardForbiddenPaths, ""},
		// Deny dominates PendingApproval, whatever the order of guards.
		{"deny dominates pending", req(grantWith(policy.Constraints{RequireApprovalAlways: true, ForbiddenPaths: []string{"/etc/**"}}), `{"p":"/etc/x"}`, nil), Deny, GuardForbiddenPaths, ""},
		{"deny dominates threshold", req(grantWith(policy.Constraints{RequireApprovalAbove: &policy.Threshold{ThresholdUnits: 1}, GovernedIntentRequired: true, MaxCallsPerMinute: 1}), `{}`, amount(5)), PendingApproval, "", GuardApprovalAbove},
		{"on_trigger routes to approval", req(grantWith(policy.Constraints{ForbiddenPaths: []string{"/etc/**"}, OnTrigger: map[string]string{"forbidden_paths": "require_approval"}}), `{"p":"/etc/x"}`, nil), PendingApproval, "", GuardForbiddenPaths},
	}
	p := testPipeline()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Evaluate(c.r, true)
			if d.Verdict != c.want {
				t.Fatalf("verdict %v (%s: %s), want %v", d.Verdict, d.Guard, d.Reason, c.want)
			}
			if c.guard != "" && d.Guard != c.guard {
				t.Fatalf("guard %q, want %q", d.Guard, c.guard)
			}
			if c.trigger != "" && (len(d.TriggeredBy) == 0 || d.TriggeredBy[0] != c.trigger) {
				t.Fatalf("triggered_by %v, want %s", d.TriggeredBy, c.trigger)
			}
		})
	}
}

func TestResumeSkipsApprovalTriggersButNotDenials(t *testing.T) {
	p := testPipeline()
	r := req(grantWith(policy.Constraints{RequireApprovalAlways: true}), `{}`, nil)
	if d := p.Evaluate(r, false); d.Verdict != Allow {
		t.Fatalf("resume re-asked for approval: %+v", d)
	}
	r = req(grantWith(policy.Constraints{RequireApprovalAlways: true, ForbiddenPaths: []string{"/x/**"}}), `{"a":"/x/y"}`, nil)
	if d := p.Evaluate(r, false); d.Verdict != Deny {
		t.Fatalf("resume ignored a denial: %+v", d)
	}
}

type badGuard struct {
	name string
	fn   func() (Result, error)
}

func (b badGuard) Name() string                   { return b.name }
func (b badGuard) Approval() bool                 { return false }
func (b badGuard) Check(*Request) (Result, error) { return b.fn() }

func TestFailingGuardsDeny(t *testing.T) {
	slow := &Pipeline{Guards: []Guard{badGuard{"slow", func() (Result, error) { return Result{Verdict: Allow}, nil }}},
		Budget: time.Millisecond}
	var calls int
	slow.Stopwatch = func() time.Duration { calls++; return time.Duration(calls) * time.Second }
	cases := map[string]*Pipeline{
		"erroring":  testPipeline(badGuard{"erroring", func() (Result, error) { return Result{}, errors.New("backend down") }}),
		"panicking": testPipeline(badGuard{"panicking", func() (Result, error) { panic("nil map") }}),
		"unknown":   testPipeline(badGuard{"unknown", func() (Result, error) { return Result{Verdict: Verdict(42)}, nil }}),
		"slow":      slow,
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			d := p.Evaluate(req(grantWith(policy.Constraints{}), `{}`, nil), true)
			if d.Verdict != Deny || d.Guard != name {
				t.Fatalf("got %+v", d)
			}
		})
	}
}
