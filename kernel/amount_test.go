package kernel

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

var refundTool = &policy.Tool{Name: "issue_refund", Category: "financial", Amount: "/amount", Currency: "/currency"}

func TestDeriveAmount(t *testing.T) {
	nested := &policy.Tool{Name: "pay", Amount: "/payment/lines/1/minor", Currency: "/payment/a~1b~0c"}
	leadingZero := &policy.Tool{Name: "pay", Amount: "/payment/lines/01/minor", Currency: "/payment/a~1b~0c"}
	cases := []struct {
		name string
		tool *policy.Tool
		args string
		want *Amount
		err  string // substring; "" = success
	}{
		{"undeclared tool", nil, `{"amount":5}`, nil, ""},
		{"tool without amount", &policy.Tool{Name: "echo"}, `{"amount":5}`, nil, ""},
		{"plain", refundTool, `{"customer_id":"c","amount":450000,"currency":"USD"}`, &Amount{450000, "USD"}, ""},
		{"zero", refundTool, `{"amount":0,"currency":"USD"}`, &Amount{0, "USD"}, ""},
		{"2^53 exactly", refundTool, `{"amount":9007199254740992,"currency":"USD"}`, &Amount{1 << 53, "USD"}, ""},
		{"whole number written as fraction", refundTool, `{"amount":450.0,"currency":"USD"}`, &Amount{450, "USD"}, ""},
		{"whole number written with exponent", refundTool, `{"amount":4.5e2,"currency":"USD"}`, &Amount{450, "USD"}, ""},
		{"nested pointer with index and escapes", nested, `{"payment":{"lines":[{"minor":1},{"minor":77}],"a/b~c":"EUR"}}`, &Amount{77, "EUR"}, ""},
		{"lowercase currency kept as written", refundTool, `{"amount":1,"currency":"usd"}`, &Amount{1, "usd"}, ""},
		{"empty arguments", refundTool, ``, nil, "the arguments have no \"/amount\""},

		{"amount missing", refundTool, `{"currency":"USD"}`, nil, `the arguments have no "/amount"`},
		{"currency missing", refundTool, `{"amount":5}`, nil, `the arguments have no "/currency"`},
		{"amount as string", refundTool, `{"amount":"450000","currency":"USD"}`, nil, "must be a number of minor units"},
		{"amount null", refundTool, `{"amount":null,"currency":"USD"}`, nil, "not null"},
		{"negative", refundTool, `{"amount":-1,"currency":"USD"}`, nil, "is negative"},
		{"negative zero", refundTool, `{"amount":-0,"currency":"USD"}`, nil, "is negative"},
		{"fraction", refundTool, `{"amount":4.5,"currency":"USD"}`, nil, "not a whole number"},
		{"just above 2^53 as a fraction", refundTool, `{"amount":9007199254740993.0,"currency":"USD"}`, nil, "not exactly the double"}, // canon refuses it first
		{"above 2^53 with exponent", refundTool, `{"amount":1e16,"currency":"USD"}`, nil, "outside ±2^53"},
		{"huge exponent", refundTool, `{"amount":1e999,"currency":"USD"}`, nil, "number not representable as a double"},
		{"tiny fraction", refundTool, `{"amount":1e-400,"currency":"USD"}`, nil, "not exactly the double"},
		{"long literal", refundTool, `{"amount":` + "1." + strings.Repeat("0", 80) + `,"currency":"USD"}`, nil, "not a plausible amount"},
		{"currency not a string", refundTool, `{"amount":1,"currency":840}`, nil, "must be a string"},
		{"currency empty", refundTool, `{"amount":1,"currency":""}`, nil, "must not be empty"},
		{"currency with space", refundTool, `{"amount":1,"currency":"US D"}`, nil, "printable ASCII"},
		{"currency too long", refundTool, `{"amount":1,"currency":"` + strings.Repeat("X", 17) + `"}`, nil, "longer than 16"},
		{"currency with control character", refundTool, `{"amount":1,"currency":"US\u0000"}`, nil, "printable ASCII"},
		{"duplicate key", refundTool, `{"amount":1,"amount":450000,"currency":"USD"}`, nil, "duplicate"},
		{"not an object", refundTool, `[1,2]`, nil, "must be a JSON object"},
		{"not JSON", refundTool, `{"amount":`, nil, "invalid JSON"},
		{"index with leading zero", leadingZero, `{"payment":{"lines":[{"minor":1},{"minor":77}],"a/b~c":"EUR"}}`, nil, `no "/payment/lines/01/minor"`},
		{"index past the end", &policy.Tool{Name: "p", Amount: "/l/2", Currency: "/c"}, `{"l":[1,2],"c":"USD"}`, nil, `no "/l/2"`},
		{"index after the last", &policy.Tool{Name: "p", Amount: "/l/-", Currency: "/c"}, `{"l":[1,2],"c":"USD"}`, nil, `no "/l/-"`},
		{"pointer through a scalar", &policy.Tool{Name: "p", Amount: "/c/x", Currency: "/c"}, `{"c":"USD"}`, nil, `no "/c/x"`},
		{"declared amount without currency", &policy.Tool{Name: "x", Amount: "/amount"}, `{"amount":1}`, nil, "no currency"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DeriveAmount(c.tool, json.RawMessage(c.args))
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrAmount) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want ErrAmount containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// The measured attack: the threshold read only the agent's own max_amount.
// Every case is a call to issue_refund under require_approval_above.
func TestThresholdBindsToTheArguments(t *testing.T) {
	usd := &policy.Threshold{ThresholdUnits: 200, Currency: "USD"}
	anyCurrency := &policy.Threshold{ThresholdUnits: 200}
	intent := func(units int64, cur string) *GovernedIntent {
		return &GovernedIntent{Purpose: "tiny", MaxAmount: &Amount{Units: units, Currency: cur}}
	}
	call := func(th *policy.Threshold, tool *policy.Tool, args string, gi *GovernedIntent) *Request {
		r := req(grantWith(policy.Constraints{RequireApprovalAbove: th}), args, gi)
		r.Tool = tool
		return r
	}
	cases := []struct {
		name   string
		r      *Request
		want   Verdict
		guard  string
		reason string
	}{
		{"450000 USD under an intent of 1 USD is outside the envelope",
			call(usd, refundTool, `{"customer_id":"cust-9012","amount":450000,"currency":"USD"}`, intent(1, "USD")),
			Deny, GuardIntentEnvelope, "the arguments move 450000 USD, more than the governed intent's max_amount of 1 USD"},
		{"450000 USD with an honest envelope asks a human",
			call(usd, refundTool, `{"customer_id":"cust-9012","amount":450000,"currency":"USD"}`, intent(450000, "USD")),
			PendingApproval, GuardApprovalAbove, "amount 450000 USD meets the approval threshold of 200 USD"},
		{"an intent without max_amount: the arguments decide",
			call(usd, refundTool, `{"amount":450000,"currency":"USD"}`, &GovernedIntent{Purpose: "p"}),
			PendingApproval, GuardApprovalAbove, "450000 USD"},
		{"199 BTC against a USD threshold asks a human",
			call(usd, refundTool, `{"amount":199,"currency":"BTC"}`, intent(199, "BTC")),
			PendingApproval, GuardApprovalAbove, "not in the threshold's currency USD"},
		{"an unknown currency asks a human",
			call(usd, refundTool, `{"amount":1,"currency":"ZZZ"}`, nil),
			Deny, GuardApprovalAbove, "needs a governed intent"},
		{"an unknown currency with an intent asks a human",
			call(usd, refundTool, `{"amount":1,"currency":"ZZZ"}`, &GovernedIntent{Purpose: "p"}),
			PendingApproval, GuardApprovalAbove, "not in the threshold's currency"},
		{"199 USD is below 200 USD",
			call(usd, refundTool, `{"amount":199,"currency":"USD"}`, intent(199, "USD")),
			Allow, "", ""},
		{"a threshold without currency knows no amount to be below it",
			call(anyCurrency, refundTool, `{"amount":199,"currency":"BTC"}`, intent(500, "BTC")),
			PendingApproval, GuardApprovalAbove, "the threshold names no currency"},
		{"envelope in another currency denies",
			call(anyCurrency, refundTool, `{"amount":10,"currency":"EUR"}`, intent(1000, "USD")),
			Deny, GuardIntentEnvelope, "max_amount is in USD"},
		{"amount equal to the envelope is within it",
			call(usd, refundTool, `{"amount":150,"currency":"USD"}`, intent(150, "USD")),
			Allow, "", ""},
		{"a missing intent still fails closed",
			call(usd, refundTool, `{"amount":1,"currency":"USD"}`, nil),
			Deny, GuardApprovalAbove, "needs a governed intent"},
		{"an amount that cannot be read denies",
			call(usd, refundTool, `{"amount":"lots","currency":"USD"}`, intent(1, "USD")),
			Deny, GuardAmount, "must be a number of minor units"},
		{"a tool matched only by a pattern, undeclared, asks a human",
			call(usd, nil, `{"amount":1,"currency":"USD"}`, intent(1, "USD")),
			PendingApproval, GuardApprovalAbove, `tool "t" declares no amount`},
		{"a declared tool without amount asks a human",
			call(usd, &policy.Tool{Name: "t"}, `{"amount":1,"currency":"USD"}`, intent(1, "USD")),
			PendingApproval, GuardApprovalAbove, "declares no amount"},
	}
	p := testPipeline()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Evaluate(c.r, true)
			got := d.Guard
			if d.Verdict == PendingApproval && len(d.TriggeredBy) > 0 {
				got = d.TriggeredBy[0]
			}
			if d.Verdict != c.want || got != c.guard || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("got %v by %q: %s; want %v by %q: …%s…", d.Verdict, got, d.Reason, c.want, c.guard, c.reason)
			}
		})
	}
}

// The envelope and the amount are not approval triggers: they hold for every
// call, with or without a threshold, and again on resume (an amendment is
// checked against the same envelope).
func TestEnvelopeHoldsWithoutThresholdAndOnResume(t *testing.T) {
	p := testPipeline()
	r := req(grantWith(policy.Constraints{RequireApprovalAlways: true}), `{"amount":300,"currency":"USD"}`,
		&GovernedIntent{Purpose: "p", MaxAmount: &Amount{Units: 200, Currency: "USD"}})
	r.Tool = refundTool
	if d := p.Evaluate(r, false); d.Verdict != Deny || d.Guard != GuardIntentEnvelope {
		t.Fatalf("resume: %+v", d)
	}
	r = req(grantWith(policy.Constraints{}), `{"currency":"USD"}`, nil)
	r.Tool = refundTool
	if d := p.Evaluate(r, true); d.Verdict != Deny || d.Guard != GuardAmount {
		t.Fatalf("no threshold, unreadable amount: %+v", d)
	}
	r = req(grantWith(policy.Constraints{}), `{"amount":5,"currency":"USD"}`, nil)
	r.Tool = refundTool
	if d := p.Evaluate(r, true); d.Verdict != Allow {
		t.Fatalf("no threshold, no intent: %+v", d)
	}
}

// FuzzDeriveAmount: any arguments either yield an error wrapping ErrAmount,
// or an amount in [0, 2^53] with a valid currency that a second derivation
// reproduces.
func FuzzDeriveAmount(f *testing.F) {
	for _, s := range []string{`{"amount":450,"currency":"USD"}`, `{"amount":4.5e2,"currency":"usd"}`, `{"amount":-0,"currency":"X"}`,
		`{"amount":9007199254740993.0,"currency":"USD"}`, `{"amount":"1","currency":"USD"}`, `{"amount":1e999}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := DeriveAmount(refundTool, raw)
		if err != nil {
			if !errors.Is(err, ErrAmount) {
				t.Fatalf("error does not wrap ErrAmount: %v", err)
			}
			return
		}
		if a == nil || a.Units < 0 || a.Units > policy.MaxThresholdUnits || policy.CheckCurrency(a.Currency) != nil {
			t.Fatalf("accepted %+v", a)
		}
		if b, err := DeriveAmount(refundTool, raw); err != nil || *b != *a {
			t.Fatalf("not deterministic: %+v %v", b, err)
		}
	})
}
