package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// A grant that routes forbidden_paths to a human instead of denying, and
// (for the amendment case) asks a human for every call.
const routedPathsPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "files"
server = "demo"
tool = "delete_file"
[grants.constraints]
%[2]s
forbidden_paths = ["/etc/**"]
on_trigger = { forbidden_paths = "require_approval" }
[grants.approval]
timeout_seconds = 600
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
`

func routedPaths(t *testing.T, extra string) *fixture {
	t.Helper()
	f := newFixture(t)
	p, err := policy.Parse([]byte(fmt.Sprintf(routedPathsPolicy, financeLead.Public(), extra)), "routed.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	f.agent = agentK
	f.capRaw, f.cap, err = f.k.IssueCapability(agentK.Public(), []string{"files"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// on_trigger = "require_approval" means "ask a human instead of denying":
// once the human approves, the guard that parked the call does not deny it
// on resume (it used to, so such a call could never run).
func TestRoutedGuardApprovedByHumanRuns(t *testing.T) {
	f := routedPaths(t, "")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "delete_file", `{"path":"/etc/hosts"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	req, err := f.k.Approval(out.ApprovalRequestID)
	if err != nil || len(req.TriggeredBy) != 1 || req.TriggeredBy[0] != kernel.GuardForbiddenPaths {
		t.Fatalf("request triggers %v %v", req.TriggeredBy, err)
	}
	tok := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	res, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Call.Status != kernel.StatusAllowed || f.disp.count(out.RequestID) != 1 {
		t.Fatalf("a routed forbidden_paths call the human approved: %s by %s (%s), dispatched %d",
			res.Call.Status, res.Call.Guard, res.Call.Reason, f.disp.count(out.RequestID))
	}
	if r := f.receipt(t, res.ReceiptID); r.Decision.Verdict != receipt.Allow {
		t.Fatalf("final receipt %+v", r.Decision)
	}
}

// Only the triggers the approver was asked about are lifted: an amendment
// that newly trips a routed guard is checked like a new call and denied.
func TestRoutedGuardNotAskedAboutStillDenies(t *testing.T) {
	f := routedPaths(t, "require_approval_always = true")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "delete_file", `{"path":"/tmp/old.log"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	tok := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, financeLead, approval.DecisionApproved, func(tk *approval.Token) {
		tk.AmendedArguments = json.RawMessage(`{"path":"/etc/passwd"}`)
	})
	res, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if err != nil {
		t.Fatal(err)
	}
	r := f.receipt(t, res.ReceiptID)
	if r.Decision.Verdict != receipt.Deny || r.Decision.Guard != kernel.GuardForbiddenPaths || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("an amendment into a routed forbidden path nobody was asked about: %+v, dispatched %d", r.Decision, f.disp.count(out.RequestID))
	}
}

// A standing (batch) approval covers what the grant asks a human about in
// general, never a deny the grant routes to a human for one call: a batch
// for delete_file used to approve deleting /etc/hosts too.
func TestStandingApprovalNeverCoversARoutedDeny(t *testing.T) {
	f := routedPaths(t, "require_approval_always = true")
	ctx := context.Background()
	bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: financeLead.Public().String(),
		Audience: f.k.PublicKey().String(), ServerPattern: "demo", ToolPattern: "delete_file",
		NotBefore: f.clock.Now().Unix(), NotAfter: f.clock.Now().Add(time.Hour).Unix()}
	raw, err := bt.Sign(financeLead)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.CreateBatch(ctx, raw); err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(ctx, f.call(t, "delete_file", `{"path":"/tmp/old.log"}`, ""))
	if err != nil || out.Status != kernel.StatusAllowed {
		t.Fatalf("a call the batch covers: %+v %v", out, err)
	}
	out, err = f.k.Submit(ctx, f.call(t, "delete_file", `{"path":"/etc/hosts"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("a routed forbidden_paths call under a batch: %+v %v (dispatched %d)", out, err, f.disp.count(out.RequestID))
	}
}
