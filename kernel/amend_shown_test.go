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

// SPEC §5: an amendment stays within what the approver was SHOWN. A call
// parked under a grant without expose_arguments was shown to nobody: its
// request carries no arguments. A reload that turns expose_arguments on
// must not let an approver rewrite a call they never saw (the stored
// request still shows them no arguments), here to another customer.
func TestAmendmentRefusedForACallParkedWithoutExposedArguments(t *testing.T) {
	f := lifecycle(t, "deny")
	hidden := strings.Replace(f.policyText, "expose_arguments = true\n", "", 1)
	p, err := policy.Parse([]byte(hidden), "hidden.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	out := f.refund(t, 450)
	req, err := f.k.Approval(out.ApprovalRequestID)
	if err != nil || len(req.Arguments) != 0 {
		t.Fatalf("parked without expose_arguments, the request shows arguments %s (%v)", req.Arguments, err)
	}
	// The operator exposes arguments again, for calls parked from now on.
	exposed, err := policy.Parse([]byte(f.policyText), "exposed.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.k.ApplyPolicy(context.Background(), exposed); err != nil {
		t.Fatal(err)
	}
	if req, _ := f.k.Approval(out.ApprovalRequestID); len(req.Arguments) != 0 {
		t.Fatalf("the reload showed the parked call's arguments: %s", req.Arguments)
	}
	tok := f.token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, func(tk *approval.Token) {
		tk.AmendedArguments = json.RawMessage(`{"customer_id":"cust-6666","amount":450,"currency":"USD"}`)
	})
	_, err = f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "")
	if !errors.Is(err, approval.ErrAmendmentRefused) || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("amendment of arguments the approver was never shown: %v, dispatched %d", err, f.disp.count(out.RequestID))
	}
	if req, _ := f.k.Approval(out.ApprovalRequestID); req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("a refused amendment changed the request: %s, %d votes", req.Status, len(req.Votes))
	}
}
