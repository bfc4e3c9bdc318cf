package policy

import (
	"strings"
	"testing"
)

// Documents for the binding rules: an http server whose tools declare (or
// fail to declare) where their money lives.
const (
	payments = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9001"
[[servers.tools]]
name = "refund"
amount = "/amount"
currency = "/currency"
[[servers.tools]]
name = "refund_bulk"
amount = "/batch/total"
currency = "/batch/currency"
`
	lookupTool = `[[servers.tools]]
name = "lookup"
`
	payGrant = `
[[grants]]
id = "g"
server = "pay"
`
)

var bindingCases = []struct {
	name, toml, msg string
}{
	// Tools: amount and currency pointers.
	{"amount without currency", payments + "[[servers.tools]]\nname = \"x\"\namount = \"/amount\"  # <-\n", `tool "x" declares amount but no currency`},
	{"currency without amount", payments + "[[servers.tools]]\nname = \"x\"\ncurrency = \"/currency\"  # <-\n", `tool "x" declares currency but no amount`},
	{"amount not a pointer", payments + "[[servers.tools]]\nname = \"x\"\namount = \"amount\"  # <-\ncurrency = \"/currency\"\n", `amount = "amount" must be a JSON Pointer into the arguments that starts with "/"`},
	{"currency bad escape", payments + "[[servers.tools]]\nname = \"x\"\namount = \"/amount\"\ncurrency = \"/cur~2\"  # <-\n", "is not a valid JSON Pointer"},
	{"amount not a string", payments + "[[servers.tools]]\nname = \"x\"\namount = 5  # <-\ncurrency = \"/c\"\n", "amount must be a string"},

	// require_approval_above must rest on a derived amount.
	{"threshold currency blank", payments + payGrant + "tool = \"refund\"\n[grants.approval]\n" + approverA +
		"[grants.constraints]\nrequire_approval_above = { threshold_units = 200, currency = \"US D\" }  # <-\n", `currency = "US D" must be printable ASCII without spaces`},
	{"threshold currency too long", payments + payGrant + "tool = \"refund\"\n[grants.approval]\n" + approverA +
		"[grants.constraints]\nrequire_approval_above = { threshold_units = 200, currency = \"DOLLARSDOLLARSDOLLARS\" }  # <-\n", "is longer than 16 characters"},
	{"threshold currency key misspelt", payments + payGrant + "tool = \"refund\"\n[grants.approval]\n" + approverA +
		"[grants.constraints]\nrequire_approval_above = { threshold_units = 200, currency = \"USD\", curency = \"USD\" }  # <-\n", `unknown key "curency" in grants.constraints.require_approval_above (did you mean "currency"?)`},
	{"threshold without currency", payments + payGrant + "tool = \"refund\"\n[grants.approval]\n" + approverA +
		"[grants.constraints]\nrequire_approval_above = { threshold_units = 200 }  # <-\n",
		`require_approval_above names no currency: every amount carries one, and a threshold without it would let 199 BTC pass a limit of 200 meant in USD; write { threshold_units = 200, currency = "USD" }`},
	{"threshold on a tool without amount", payments + lookupTool + payGrant + "tool = \"lookup\"\n[grants.approval]\n" + approverA +
		"[grants.constraints]\nrequire_approval_above = { threshold_units = 200, currency = \"USD\" }  # <-\n", `grant "g" has require_approval_above, but tool "lookup" declares no amount`},
	{"threshold on a builtin tool without amount", builtin + "[[grants]]\nid = \"g\"\nserver = \"s\"\ntool = \"echo\"\n[grants.approval]\n" + approverA +
		"[grants.constraints]\nrequire_approval_above = { threshold_units = 1, currency = \"USD\" }  # <-\n", `tool "echo" declares no amount`},
	{"threshold on a declared builtin tool without amount", builtin + "[[servers.tools]]\nname = \"issue_refund\"\n" +
		"[[grants]]\nid = \"g\"\nserver = \"s\"\ntool = \"issue_refund\"\n[grants.approval]\n" + approverA +
		"[grants.constraints]\nrequire_approval_above = { threshold_units = 1, currency = \"USD\" }  # <-\n", `tool "issue_refund" declares no amount`},
	{"threshold on a pattern covering a tool without amount", payments + lookupTool + payGrant + "tool = \"*\"\n[grants.approval]\n" + approverA +
		"[grants.constraints]\nrequire_approval_above = { threshold_units = 200, currency = \"USD\" }  # <-\n", `covers tool = "*", but these tools of server "pay" declare no amount: "lookup"`},

	// Conditions.
	{"deny_when syntax", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = [\n  \"args.amount > 5\",\n  \"args.amount >\",  # <-\n]\n", "deny_when[1] `args.amount >`: Syntax error"},
	{"deny_when single string syntax", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = \"args.amount >\"  # <-\n", "deny_when[0] `args.amount >`: Syntax error"},
	{"deny_when not boolean", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = [\"args.amount\"]  # <-\n", "must be true or false, but it is of type dyn"},
	{"deny_when string result", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = [\"tool + 'x'\"]  # <-\n", "must be true or false, but it is of type string"},
	{"deny_when unknown variable", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = [\"arguments.amount > 5\"]  # <-\n", "undeclared reference to 'arguments'"},
	{"deny_when type error", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = [\"tool > 5\"]  # <-\n", "found no matching overload"},
	{"deny_when empty", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = [\" \"]  # <-\n", "deny_when[0] is empty"},
	{"deny_when not a list or string", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = 5  # <-\n", "deny_when must be a list, not the number 5"},
	{"deny_when too long", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = [\"" + strings.Repeat("true && ", 300) + "true\"]  # <-\n", "the limit is 2048"},
	{"deny_when literal regex invalid", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = ['tool.matches(\"(a{1,1000}){1,1000}\")']  # <-\n", "invalid repeat count"},
	{"require_approval_when without approval", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\nrequire_approval_when = \"args.amount > 5\"  # <-\n", `grant "g" asks for approval (require_approval_when) but has no [grants.approval] table`},
	{"require_approval_when syntax", payments + payGrant + "tool = \"refund\"\n[grants.approval]\n" + approverA + "[grants.constraints]\nrequire_approval_when = [\"(\"]  # <-\n", "require_approval_when[0] `(`: Syntax error"},
	{"too many conditions", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\ndeny_when = [" + strings.Repeat("\"true\", ", MaxConditionsPerGrant) + "\"true\"]  # <-\n", "33 deny_when expressions; the limit is 32"},

	// Paths.
	{"allowed path bad", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\nallowed_paths = [\"/srv/[\"]  # <-\n", `allowed_paths entry "/srv/[" is not a valid pattern`},
	{"allowed path empty", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\nallowed_paths = [\"\"]  # <-\n", "allowed_paths entries must not be empty"},
	{"case-insensitive without forbidden paths", payments + payGrant + "tool = \"refund\"\n[grants.constraints]\nforbidden_paths_case_insensitive = true  # <-\n", "there are no forbidden_paths to apply it to"},
	{"on_trigger allowed_paths bad action", payments + payGrant + "tool = \"refund\"\n[grants.constraints.on_trigger]\nallowed_paths = \"allow\"  # <-\n", `on_trigger.allowed_paths = "allow"`},

	// Delivery.
	{"server delivery unknown", builtin + "delivery = \"exactly_once\"  # <-\n", `server "s": delivery = "exactly_once": use "at_least_once"`},
	{"tool delivery hyphenated", payments + "delivery = \"at-most-once\"  # <-\n", `tool "refund_bulk": delivery = "at-most-once"`},
	{"tool delivery hint", payments + "delivery = \"At-Most-Once\"  # <-\n", `(did you mean "at_most_once"?)`},
	{"server retry deadline too long", builtin + "retry_deadline_seconds = 3601  # <-\n", "retry_deadline_seconds = 3601 is more than the limit of 3600"},
	{"tool retry deadline negative", payments + "retry_deadline_seconds = -1  # <-\n", "retry_deadline_seconds must be 0 or more"},
}

func TestBindingRulesRejected(t *testing.T) {
	for _, c := range bindingCases {
		t.Run(c.name, func(t *testing.T) { checkInvalid(t, c.name, c.toml, c.msg) })
	}
}

func TestBindingRulesAccepted(t *testing.T) {
	approvalFor := func(constraints string) string {
		return "[grants.constraints]\n" + constraints + "[grants.approval]\n" + approverA
	}
	cases := map[string]string{
		"threshold with currency on a declared tool": payments + payGrant + "tool = \"refund\"\n" +
			approvalFor("require_approval_above = { threshold_units = 200, currency = \"USD\" }\n"),
		"threshold on a pattern whose tools all declare": payments + lookupTool + payGrant + "tool = \"refund*\"\n" +
			approvalFor("require_approval_above = { threshold_units = 200, currency = \"USD\" }\n"),
		"threshold on the builtin refund (it declares /amount)": grantHead +
			approvalFor("require_approval_above = { threshold_units = 200, currency = \"usd\" }\n"),
		"pointers with escapes and indices": "[[servers]]\nid = \"h\"\ntransport = \"http\"\nurl = \"http://x\"\n[[servers.tools]]\nname = \"t\"\n" +
			"amount = \"/items/0/a~1b\"\ncurrency = \"/m~0c\"\n",
		"conditions as a list and as one string": payments + payGrant + "tool = \"refund\"\n" + approvalFor(
			"deny_when = [\"has(args.amount) && args.amount > 1000000\", \"args.currency != 'USD'\"]\n"+
				"require_approval_when = \"intent == null || args.amount > intent.max_amount.units / 2\"\n"),
		"conditions over every variable": payments + payGrant + "tool = \"refund\"\n[grants.constraints]\n" +
			"deny_when = \"server == 'pay' && tool.startsWith('ref') && subject.startsWith('ed25519:') && args.size() > 100\"\n",
		"a large literal regex (cel's own size validator would panic on it)": payments + payGrant + "tool = \"refund\"\n[grants.constraints]\n" +
			"deny_when = 'args.note.matches(\"(abcdefghij){200}\")'\n",
		"delivery and retry deadline": payments + "delivery = \"at_most_once\"\nretry_deadline_seconds = 3600\n",
		"paths": payments + payGrant + "tool = \"refund\"\n[grants.constraints]\nallowed_paths = [\"/srv/**\"]\n" +
			"forbidden_paths = [\"/srv/secret/**\"]\nforbidden_paths_case_insensitive = true\non_trigger = { allowed_paths = \"require_approval\" }\n" +
			"[grants.approval]\n" + approverA,
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(doc(src), "ok.toml"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConditionsCompiledOnceAndKept(t *testing.T) {
	src := payments + payGrant + "tool = \"refund\"\n[grants.constraints]\n" +
		"deny_when = [\"args.amount > 100\", \"tool != 'refund'\"]\n"
	p, err := Parse(doc(src), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	gc := p.Conditions("g")
	if gc == nil || len(gc.DenyWhen) != 2 || len(gc.RequireApprovalWhen) != 0 {
		t.Fatalf("conditions = %+v", gc)
	}
	if got := gc.DenyWhen[1].String(); got != "deny_when[1] `tool != 'refund'`" {
		t.Errorf("String() = %q", got)
	}
	cases := []struct {
		name string
		in   ConditionInput
		cond int
		want bool
		err  bool
	}{
		{"true", ConditionInput{Args: map[string]any{"amount": int64(101)}}, 0, true, false},
		{"false", ConditionInput{Args: map[string]any{"amount": int64(100)}}, 0, false, false},
		{"double against int", ConditionInput{Args: map[string]any{"amount": 100.5}}, 0, true, false},
		{"missing key is an error", ConditionInput{Args: map[string]any{}}, 0, false, true},
		{"type mismatch is an error", ConditionInput{Args: map[string]any{"amount": "lots"}}, 0, false, true},
		{"nil args are an empty object", ConditionInput{Tool: "nope"}, 1, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := gc.DenyWhen[c.cond].Eval(&c.in)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("Eval = %v, %v; want %v, error %v", got, err, c.want, c.err)
			}
		})
	}
	if p.Conditions("other") != nil {
		t.Error("conditions for a grant without any")
	}
}

func TestConditionCostLimit(t *testing.T) {
	src := payments + payGrant + "tool = \"refund\"\n[grants.constraints]\n" +
		"deny_when = \"args.items.exists(x, args.items.exists(y, x + y == -1))\"\n"
	p, err := Parse(doc(src), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 2000) // 4M comparisons: far above the limit
	for i := range items {
		items[i] = int64(i)
	}
	_, err = p.Conditions("g").DenyWhen[0].Eval(&ConditionInput{Args: map[string]any{"items": items}})
	if err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("err = %v, want the cost limit", err)
	}
	// The same expression over a small list is well within it.
	if hit, err := p.Conditions("g").DenyWhen[0].Eval(&ConditionInput{Args: map[string]any{"items": items[:10]}}); err != nil || hit {
		t.Fatalf("small list: %v %v", hit, err)
	}
}

func TestCheckCurrency(t *testing.T) {
	for s, ok := range map[string]bool{
		"USD": true, "usd": true, "USDC": true, "X-1.b_2": true, "ABCDEFGHIJKLMNOP": true,
		"": false, "US D": false, " USD": false, "US\tD": false, "ABCDEFGHIJKLMNOPQ": false, "€": false, "U\x00": false,
	} {
		if err := CheckCurrency(s); (err == nil) != ok {
			t.Errorf("CheckCurrency(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

// deny_when = "x" and deny_when = ["x"] mean the same, so they hash alike.
func TestConditionStringIsAListOfOne(t *testing.T) {
	base := payments + payGrant + "tool = \"refund\"\n[grants.constraints]\n"
	one, err := Parse(doc(base+"deny_when = \"args.amount > 5\"\n"), "a.toml")
	if err != nil {
		t.Fatal(err)
	}
	list, err := Parse(doc(base+"deny_when = [\"args.amount > 5\"]\n"), "b.toml")
	if err != nil {
		t.Fatal(err)
	}
	if one.Hash != list.Hash || len(one.Grants[0].Constraints.DenyWhen) != 1 {
		t.Fatalf("string form differs from the list: %s vs %s, %v", one.Hash, list.Hash, one.Grants[0].Constraints.DenyWhen)
	}
	other, err := Parse(doc(base+"deny_when = [\"args.amount > 6\"]\n"), "c.toml")
	if err != nil || other.Hash == list.Hash {
		t.Fatalf("a different condition hashes the same: %v", err)
	}
}
