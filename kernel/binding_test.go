package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// The measured attacks on "what a human approves is what runs", end to end
// through Submit: each outcome, its receipt, and whether the tool ran.
func TestBindingAttacksThroughSubmit(t *testing.T) {
	f := newFixture(t)
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	// The threshold names its currency, as every threshold must.
	text := fmt.Sprintf(testPolicy, approver.Public())
	p, err := policy.Parse([]byte(text), "binding.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	cases := []struct {
		name, tool, args, intent string
		status, verdict, guard   string
		reason                   string
	}{
		{"refund of 450000 under an intent of 1",
			"issue_refund", `{"customer_id":"cust-9012","amount":450000,"currency":"USD"}`, `{"purpose":"tiny","max_amount":{"units":1,"currency":"USD"}}`,
			kernel.StatusDenied, receipt.Deny, kernel.GuardIntentEnvelope, "more than the governed intent's max_amount of 1 USD"},
		{"refund of 450000 with an intent that states no amount",
			"issue_refund", `{"customer_id":"cust-9012","amount":450000,"currency":"USD"}`, `{"purpose":"tiny"}`,
			kernel.StatusPendingApproval, receipt.Incomplete, "", ""},
		{"199 BTC against a 200 USD threshold",
			"issue_refund", `{"customer_id":"c","amount":199,"currency":"BTC"}`, `{"purpose":"p","max_amount":{"units":199,"currency":"BTC"}}`,
			kernel.StatusPendingApproval, receipt.Incomplete, "", ""},
		{"199 USD",
			"issue_refund", `{"customer_id":"c","amount":199,"currency":"USD"}`, `{"purpose":"p","max_amount":{"units":199,"currency":"USD"}}`,
			kernel.StatusAllowed, receipt.Allow, "", ""},
		{"an amount the kernel cannot read",
			"issue_refund", `{"customer_id":"c","amount":"199","currency":"USD"}`, `{"purpose":"p"}`,
			kernel.StatusDenied, receipt.Deny, kernel.GuardAmount, "must be a number of minor units"},
		{"a path through /proc/self/root",
			"delete_file", `{"path":"/proc/self/root/etc/passwd"}`, "",
			kernel.StatusDenied, receipt.Deny, kernel.GuardForbiddenPaths, `(read as "/etc/passwd")`},
		{"a file: URL", "delete_file", `{"path":"file:///etc/passwd"}`, "",
			kernel.StatusDenied, receipt.Deny, kernel.GuardForbiddenPaths, "matches"},
		{"a percent-encoded path", "delete_file", `{"path":"%2Fetc%2Fpasswd"}`, "",
			kernel.StatusDenied, receipt.Deny, kernel.GuardForbiddenPaths, "matches"},
		{"a path with a leading space", "delete_file", `{"path":" /etc/passwd"}`, "",
			kernel.StatusDenied, receipt.Deny, kernel.GuardForbiddenPaths, "whitespace"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			call := f.call(t, c.tool, c.args, c.intent)
			call.RequestID = fmt.Sprintf("binding-%d", i)
			f.sign(t, call, f.agent, f.clock.Now())
			out, err := f.k.Submit(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			r := f.receipt(t, out.ReceiptID)
			if out.Status != c.status || r.Decision.Verdict != c.verdict || r.Decision.Guard != c.guard || !strings.Contains(r.Decision.Reason, c.reason) {
				t.Fatalf("got %s, receipt %+v; want %s, %s by %q: …%s…", out.Status, r.Decision, c.status, c.verdict, c.guard, c.reason)
			}
			if ran := f.disp.count(call.RequestID) > 0; ran != (c.status == kernel.StatusAllowed) {
				t.Fatalf("dispatched = %v for status %s", ran, c.status)
			}
		})
	}
}
