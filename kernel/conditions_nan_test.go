package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// Double arithmetic in CEL follows IEEE 754: 0.0/0.0 is NaN, 1e308*10.0 is
// +Inf, and double("NaN") converts without complaint. NaN compares false
// with everything, so a threshold written over a ratio, `double(args.amount)
// / double(args.qty) > 100.0`, was false for {"amount":0,"qty":0} and the
// call ran with no human asked; `!=` with NaN is true, and `string()` of it
// is "NaN". A condition whose evaluation produces NaN or an infinity cannot
// be decided, and denies, as any evaluation error does; a term that does
// not decide the result (the other side of a true `||` or a false `&&`)
// leaves the answer to the term that does.
const nanConditionsPolicy = `
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
deny_when = ["double(args.rate) * double(args.amount) > 1000000.0"]
require_approval_when = "double(args.amount) / double(args.qty) > 100.0"
[grants.approval]
[[grants.approval.approvers]]
public_key = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
display_name = "A"

[[grants]]
id = "ratio"
server = "pay"
tool = "refund"
[grants.constraints]
require_approval_when = [
  "has(args.urgent) && args.urgent == true || double(args.amount) / double(args.qty) > 100.0",
  "args.qty > 0 && double(args.amount) / double(args.qty) < 1.0",
]
[grants.approval]
[[grants.approval.approvers]]
public_key = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
display_name = "A"
`

func TestConditionNaNOrInfinityDenies(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nan.toml")
	if err := os.WriteFile(file, []byte(nanConditionsPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	pl := testPipeline()
	for _, c := range []struct {
		name, grant, args string
		want              Verdict
		reason            string
	}{
		{"ordinary, under the threshold", "refunds", `{"rate":1,"amount":500,"qty":10}`, Allow, ""},
		{"ordinary, over the threshold", "refunds", `{"rate":1,"amount":5000,"qty":10}`, PendingApproval, "require_approval_when[0]"},
		{"0/0 is NaN", "refunds", `{"rate":1,"amount":0,"qty":0}`, Deny, "require_approval_when[0]"},
		{"x/0 is infinite", "refunds", `{"rate":1,"amount":5000,"qty":0}`, Deny, "require_approval_when[0]"},
		{"overflow is infinite", "refunds", `{"rate":"1e308","amount":10,"qty":1}`, Deny, "deny_when[0]"},
		{"NaN converted from a string", "refunds", `{"rate":"NaN","amount":5000,"qty":10}`, Deny, "deny_when[0]"},
		{"-Inf converted from a string", "refunds", `{"rate":"-inf","amount":5000,"qty":10}`, Deny, "deny_when[0]"},
		// A true || decides without its NaN term, and a false && guards
		// its division: the human is asked.
		{"a true || decides", "ratio", `{"urgent":true,"amount":0,"qty":0}`, PendingApproval, "require_approval_when[0]"},
		{"a false || leaves NaN deciding", "ratio", `{"urgent":false,"amount":0,"qty":0}`, Deny, "require_approval_when[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := pl.Evaluate(condCall(t, p, c.grant, c.args, ""), true)
			if d.Verdict != c.want || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("%s: got %v by %q (%s), want %v naming %q", c.args, d.Verdict, d.Guard, d.Reason, c.want, c.reason)
			}
			if c.want == Deny && !strings.Contains(d.Reason, "could not be evaluated") {
				t.Fatalf("%s: denied (%s), want an undecidable condition", c.args, d.Reason)
			}
		})
	}
}

// A constant that is NaN (cel converts double('NaN') when the policy loads)
// is refused with the file, not evaluated as false on every call.
func TestConditionConstantNaNIsRefused(t *testing.T) {
	src := strings.Replace(nanConditionsPolicy, `deny_when = ["double(args.rate) * double(args.amount) > 1000000.0"]`,
		`deny_when = ["double(args.rate) > double('NaN')"]`, 1)
	if _, err := policy.Parse([]byte(src), "nan.toml"); err == nil || !strings.Contains(err.Error(), "deny_when[0]") {
		t.Fatalf("a NaN constant loaded: %v", err)
	}
}
