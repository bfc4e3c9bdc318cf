package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// bindingPolicy: refunds hidden from approvers (no expose_arguments) and
// refunds shown to them; %[1]s and %[2]s are approver keys.
const bindingPolicy = `
[[servers]]
id = "pay"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
action = "charge"
amount = "/amount"
currency = "/currency"

[[grants]]
id = "hidden"
server = "pay"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
`

func bindingWorld(t *testing.T, exposed bool, tool *scriptedTool) *testkit.World {
	t.Helper()
	text := fmt.Sprintf(bindingPolicy, financeLead.Public(), cfo.Public())
	if exposed {
		text = strings.Replace(text, "[grants.approval]\n", "[grants.approval]\nexpose_arguments = true\n", 1)
	}
	return testkit.NewWorld(t, testkit.Options{PolicyTOML: text, Dispatcher: tool, Server: "pay", Grants: []string{"hidden"}})
}

const refund300 = `{"customer_id":"cust-9012","amount":300,"currency":"USD"}`

func canonical(t *testing.T, s string) string {
	t.Helper()
	c, err := canon.Canonicalize([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// Issue 10 (2): an approver cannot rewrite what they were not shown; with
// the arguments shown, an amendment stays within the money they saw.
func TestAmendmentsStayWithinWhatTheApproverSaw(t *testing.T) {
	ctx := context.Background()
	t.Run("not exposed: refused, token not consumed, nothing runs", func(t *testing.T) {
		tool := &scriptedTool{}
		w := bindingWorld(t, false, tool)
		out := w.Submit(t, "issue_refund", refund300, "")
		evil := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, func(tk *approval.Token) {
			tk.AmendedArguments = json.RawMessage(`{"customer_id":"cust-EVIL","amount":99999,"currency":"USD"}`)
		})
		if _, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, evil, "", ""); !errors.Is(err, approval.ErrAmendmentRefused) {
			t.Fatalf("hidden amendment: %v", err)
		}
		req, _ := w.Kernel.Approval(out.ApprovalRequestID)
		if req.Status != approval.StatusPending || len(req.Votes) != 0 || len(tool.deliveries(out.RequestID)) != 0 {
			t.Fatalf("a refused amendment changed state: %+v", req)
		}
		// The approver can still decide the call as shown.
		res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", "")
		if err != nil || res.Call.Status != kernel.StatusAllowed || string(tool.deliveries(out.RequestID)[0].Arguments) != canonical(t, refund300) {
			t.Fatalf("plain approval after refusal: %+v %v", res, err)
		}
	})
	cases := []struct {
		name, amended string
		ok            bool
	}{
		{"lower amount", `{"customer_id":"cust-9012","amount":200,"currency":"USD"}`, true},
		{"other customer, same money", `{"customer_id":"cust-1111","amount":300,"currency":"USD"}`, true},
		{"higher amount", `{"customer_id":"cust-9012","amount":99999,"currency":"USD"}`, false},
		{"other currency", `{"customer_id":"cust-9012","amount":300,"currency":"BTC"}`, false},
		{"amount removed", `{"customer_id":"cust-9012","currency":"USD"}`, false},
		{"not an object", `[1,2]`, false},
	}
	for _, c := range cases {
		t.Run("exposed: "+c.name, func(t *testing.T) {
			tool := &scriptedTool{}
			w := bindingWorld(t, true, tool)
			out := w.Submit(t, "issue_refund", refund300, "")
			tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, func(tk *approval.Token) {
				tk.AmendedArguments = json.RawMessage(c.amended)
			})
			res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
			if !c.ok {
				if !errors.Is(err, approval.ErrAmendmentRefused) || len(tool.deliveries(out.RequestID)) != 0 {
					t.Fatalf("got %v, %d deliveries", err, len(tool.deliveries(out.RequestID)))
				}
				return
			}
			if err != nil || res.Call == nil || res.Call.Status != kernel.StatusAllowed {
				t.Fatalf("%+v %v", res, err)
			}
			d := tool.deliveries(out.RequestID)
			r := w.Receipt(t, res.ReceiptID)
			if len(d) != 1 || string(d[0].Arguments) != canonical(t, c.amended) || r.Metadata["amended_parameter_hash"] != r.ParameterHash ||
				r.Metadata["original_parameter_hash"] == r.ParameterHash {
				t.Fatalf("delivered %s; receipt %v", d[0].Arguments, r.Metadata)
			}
			if amt := r.Metadata["amount"].(map[string]any); amt["units"] == nil {
				t.Fatalf("receipt lacks the amended amount: %v", r.Metadata)
			}
		})
	}
}

// Issue 10 (5): approvers are checked at vote time against the policy in
// force: a removed key cannot vote on requests parked before, and a
// request left with no approver ends with a deny receipt.
func TestApproversCheckedAtVoteTime(t *testing.T) {
	ctx := context.Background()
	w := bindingWorld(t, false, &scriptedTool{})
	first := w.Submit(t, "issue_refund", refund300, "")
	second := w.Submit(t, "issue_refund", refund300, "")
	// The CFO is removed from the grant; the file is reloaded.
	without := strings.Replace(w.PolicyText, fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"CFO\"\n", cfo.Public()), "", 1)
	p, err := policy.Parse([]byte(without), "reloaded.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.ApplyPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Kernel.Respond(ctx, first.ApprovalRequestID, w.Token(t, first.ApprovalRequestID, cfo, approval.DecisionApproved, nil), "", ""); !errors.Is(err, approval.ErrUntrustedSigner) {
		t.Fatalf("removed approver voted: %v", err)
	}
	if req, _ := w.Kernel.Approval(first.ApprovalRequestID); len(req.TrustedApprovers) != 1 || req.Trusts(cfo.Public().String()) {
		t.Fatalf("stored trusted set not reconciled: %v", req.TrustedApprovers)
	}
	// The remaining approver still decides.
	if res, err := w.Kernel.Respond(ctx, first.ApprovalRequestID, w.Token(t, first.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", ""); err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("remaining approver: %+v %v", res, err)
	}
	// Now every approver goes: the other parked call ends, with a receipt.
	none := strings.Replace(without, fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Finance Lead\"\n", financeLead.Public()),
		fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Someone Else\"\n", outsider.Public()), 1)
	p2, err := policy.Parse([]byte(none), "none.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.ApplyPolicy(ctx, p2); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Kernel.Respond(ctx, second.ApprovalRequestID, w.Token(t, second.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", ""); err == nil {
		t.Fatal("removed approver decided")
	}
	req, _ := w.Kernel.Approval(second.ApprovalRequestID)
	if req.Status != approval.StatusPending || !req.Trusts(outsider.Public().String()) {
		t.Fatalf("second request after the swap: %+v", req)
	}
	// Remove the grant's approval table altogether: nobody may decide.
	gone := strings.Replace(none, "require_approval_always = true\n[grants.approval]\n"+
		fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Someone Else\"\n", outsider.Public()), "forbidden_paths = [\"/etc/**\"]\n", 1)
	p3, err := policy.Parse([]byte(gone), "gone.toml")
	if err != nil {
		t.Fatalf("%v\n%s", err, gone)
	}
	if err := w.Kernel.ApplyPolicy(ctx, p3); err != nil {
		t.Fatal(err)
	}
	req, _ = w.Kernel.Approval(second.ApprovalRequestID)
	rec, _ := w.Kernel.Call(second.RequestID)
	r := w.Receipt(t, rec.ReceiptID)
	if req.Status != approval.StatusDenied || rec.Status != kernel.StatusDenied || r.Decision.Guard != kernel.GuardApprovalPolicy ||
		r.Metadata["previous_receipt_id"] != second.ReceiptID {
		t.Fatalf("orphaned request: %s / %s / %+v", req.Status, rec.Status, r.Decision)
	}
}

// Issue 10 (6): a parked call can be cancelled; the chain ends with a
// cancelled receipt and nothing runs.
func TestCancelParkedCall(t *testing.T) {
	ctx := context.Background()
	tool := &scriptedTool{}
	w := bindingWorld(t, false, tool)
	out := w.Submit(t, "issue_refund", refund300, "")
	for _, bad := range []struct{ reason, by string }{{"", kernel.CancelledByAdmin}, {"  ", kernel.CancelledByAgent},
		{strings.Repeat("x", kernel.MaxCancelReasonLen+1), kernel.CancelledByAdmin}, {"ok", "someone"}} {
		if _, err := w.Kernel.Cancel(ctx, out.ApprovalRequestID, bad.reason, bad.by); !errors.Is(err, kernel.ErrBadCall) {
			t.Fatalf("cancel %q by %q: %v", bad.reason, bad.by, err)
		}
	}
	got, err := w.Kernel.Cancel(ctx, out.ApprovalRequestID, "customer withdrew the request", kernel.CancelledByAgent)
	if err != nil || got.Status != kernel.StatusCancelled || got.Reason != "customer withdrew the request" {
		t.Fatalf("%+v %v", got, err)
	}
	r := w.Receipt(t, got.ReceiptID)
	if r.Decision.Verdict != receipt.Cancelled || r.Metadata["previous_receipt_id"] != out.ReceiptID || r.Metadata["cancelled_by"] != "agent" {
		t.Fatalf("cancelled receipt: %+v", r)
	}
	req, _ := w.Kernel.Approval(out.ApprovalRequestID)
	if req.Status != approval.StatusCancelled || req.Resolution.CallStatus != kernel.StatusCancelled {
		t.Fatalf("request after cancel: %+v", req.Resolution)
	}
	// A decision after the cancellation does not count; a second cancel neither.
	if _, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", ""); !errors.Is(err, kernel.ErrConflict) {
		t.Fatalf("approve after cancel: %v", err)
	}
	if _, err := w.Kernel.Cancel(ctx, out.ApprovalRequestID, "again", kernel.CancelledByAdmin); !errors.Is(err, approval.ErrNotPending) {
		t.Fatalf("second cancel: %v", err)
	}
	if len(tool.deliveries(out.RequestID)) != 0 || w.Kernel.ArmedTimers() != 0 {
		t.Fatal("a cancelled call ran or kept its timer")
	}
}

// Issue 10 (8, 9): an approval is not a promise the call runs: when the
// capability was revoked during the wait, the respond result and the
// resolution say a guard denied it, and who approved.
func TestApprovedButDeniedOnResumeIsReportedHonestly(t *testing.T) {
	ctx := context.Background()
	w := bindingWorld(t, false, &scriptedTool{})
	out := w.Submit(t, "issue_refund", refund300, "")
	if err := w.Kernel.Revoke(ctx, w.Cap.ID); err != nil {
		t.Fatal(err)
	}
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, w.Token(t, out.ApprovalRequestID, cfo, approval.DecisionApproved, nil), "", "")
	if err != nil || res.Outcome != approval.StatusApproved || res.Call == nil || res.Call.Status != kernel.StatusDenied || res.Call.Guard != kernel.GuardCapability {
		t.Fatalf("%+v %v", res, err)
	}
	req, _ := w.Kernel.Approval(out.ApprovalRequestID)
	if rs := req.Resolution; rs.Guard != kernel.GuardCapability || rs.CallStatus != kernel.StatusDenied || rs.DecidedBy != "CFO" {
		t.Fatalf("resolution: %+v", rs)
	}
}

// A capability may carry a signed label naming the agent; approvers see it
// on the request. Labels are bounded and printable.
func TestCapabilityLabel(t *testing.T) {
	w := bindingWorld(t, false, &scriptedTool{})
	raw, c, err := w.Kernel.IssueLabeledCapability(w.Agent.Public(), "support-bot-eu", []string{"hidden"}, time.Hour)
	if err != nil || c.Label != "support-bot-eu" {
		t.Fatalf("%+v %v", c, err)
	}
	out := w.SubmitCall(t, w.CallAs(t, w.Agent, raw, "pay", "issue_refund", refund300, ""))
	if req, _ := w.Kernel.Approval(out.ApprovalRequestID); req.SubjectLabel != "support-bot-eu" {
		t.Fatalf("request label %q", req.SubjectLabel)
	}
	for _, bad := range []string{strings.Repeat("x", kernel.MaxLabelLen+1), " padded", "tab\tinside", "bell\a"} {
		if _, _, err := w.Kernel.IssueLabeledCapability(w.Agent.Public(), bad, []string{"hidden"}, time.Hour); !errors.Is(err, kernel.ErrCapabilityInvalid) {
			t.Errorf("label %q: %v", bad, err)
		}
	}
}
