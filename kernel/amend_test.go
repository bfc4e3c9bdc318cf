package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
)

// An amendment may not raise the amount the approver was SHOWN (the
// request's amount, fixed when the call was parked), even after a reload
// drops the tool's amount pointers: derived under the new policy alone,
// neither the original nor the amended call would have an amount, and a
// 450 USD refund could be amended to 900,000.
func TestAmendmentCannotRaiseTheShownAmountAfterAReload(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	req, err := f.k.Approval(out.ApprovalRequestID)
	if err != nil || req.Amount == nil || req.Amount.Units != 450 {
		t.Fatalf("request amount %+v %v", req.Amount, err)
	}
	// The platform team stops declaring the amount (and so asks a human
	// for every refund instead of those above a threshold).
	undeclared := strings.Replace(f.policyText, `amount = "/amount"
currency = "/currency"
`, "", 1)
	undeclared = strings.Replace(undeclared, "require_approval_above = { threshold_units = 200, currency = \"USD\" }", "require_approval_always = true", 1)
	p, err := policy.Parse([]byte(undeclared), "undeclared.toml")
	if err != nil {
		t.Fatal(err)
	}
	if tool, _ := p.Tool("demo", "issue_refund"); tool != nil && tool.Amount != "" {
		t.Fatal("the reloaded policy still declares the amount")
	}
	f.k.SetPolicy(p)
	tok := f.token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, func(tk *approval.Token) {
		tk.AmendedArguments = json.RawMessage(`{"customer_id":"cust-9012","amount":90000000,"currency":"USD"}`)
	})
	_, err = f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "")
	if !errors.Is(err, approval.ErrAmendmentRefused) || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("amendment past the shown 450 USD after a reload: %v, dispatched %d", err, f.disp.count(out.RequestID))
	}
}
