package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// quorumReloadPolicy: echo always needs approval; %[3]d is the quorum.
const quorumReloadPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = %[3]d
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
`

// A reload that raises a grant's quorum (a two-person rule added for a
// dangerous tool) must apply to calls already parked under it: approvers
// are read from the policy in force at vote time (docs/platform.md
// "Reload"), and "a valid file replaces grants, constraints and approvers
// ... for approvals resumed later". The request once kept the quorum it was
// parked with, so ONE signature ran a call the policy in force said needs
// two.
func TestReloadRaisingQuorumAppliesToParkedCalls(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	parse := func(q int) *policy.Policy {
		p, err := policy.Parse([]byte(fmt.Sprintf(quorumReloadPolicy, financeLead.Public(), cfo.Public(), q)), "q.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.k.SetPolicy(parse(1))
	var err error
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"prod"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	// The operator tightens the grant: two distinct approvers from now on.
	if err := f.k.ApplyPolicy(ctx, parse(2)); err != nil {
		t.Fatal(err)
	}
	tok := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	res, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != approval.StatusPending || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("after a reload to quorum = 2, one approval resolved the request as %q (quorum %d) and the tool ran %d time(s)",
			res.Outcome, res.Quorum, f.disp.count(out.RequestID))
	}
}

// denyQuorumReloadPolicy: echo always needs approval; %[3]d is deny_quorum.
const denyQuorumReloadPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
deny_quorum = %[3]d
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
`

// The same snapshot with deny_quorum: the operator reloads deny_quorum
// 2 -> 1 ("any one of them can stop it"). A parked call gets a denial,
// which under the policy in force ends it; the request keeps its parked
// deny_quorum = 2, stayed pending, and a second approver's approval then
// ran the call a human had refused.
func TestReloadLoweringDenyQuorumAppliesToParkedCalls(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	parse := func(dq int) *policy.Policy {
		p, err := policy.Parse([]byte(fmt.Sprintf(denyQuorumReloadPolicy, financeLead.Public(), cfo.Public(), dq)), "dq.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.k.SetPolicy(parse(2))
	var err error
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"prod"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	if err := f.k.ApplyPolicy(ctx, parse(1)); err != nil {
		t.Fatal(err)
	}
	deny := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, financeLead, approval.DecisionDenied, nil)
	res, err := f.k.Respond(ctx, out.ApprovalRequestID, deny, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome == approval.StatusDenied {
		return // the policy in force decided
	}
	ok := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, cfo, approval.DecisionApproved, nil)
	res, err = f.k.Respond(ctx, out.ApprovalRequestID, ok, "", "")
	t.Fatalf("under deny_quorum = 1 (reloaded) one denial did not end the request; a later approval answered %+v (err %v) and the tool ran %d time(s)",
		res, err, f.disp.count(out.RequestID))
}

// A denial recorded before a reload lowers deny_quorum to meet it ends
// the call at the reload, with a deny receipt, as the denial itself would
// have under the new policy; and a reload that LOWERS quorum does not
// loosen a call already parked: it still needs the approvals it was
// parked with.
func TestReloadEndsOrKeepsParkedCallsNeverLoosening(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	parse := func(text string, n int) *policy.Policy {
		p, err := policy.Parse([]byte(fmt.Sprintf(text, financeLead.Public(), cfo.Public(), n)), "r.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.k.SetPolicy(parse(denyQuorumReloadPolicy, 2))
	var err error
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	denied, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"a"}`, ""))
	if err != nil || denied.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", denied, err)
	}
	deny := testkit.SignToken(t, f.k, f.clock.Now(), denied.ApprovalRequestID, financeLead, approval.DecisionDenied, nil)
	if res, err := f.k.Respond(ctx, denied.ApprovalRequestID, deny, "", ""); err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("one denial of two: %+v %v", res, err)
	}
	if err := f.k.ApplyPolicy(ctx, parse(denyQuorumReloadPolicy, 1)); err != nil {
		t.Fatal(err)
	}
	req, err := f.k.Approval(denied.ApprovalRequestID)
	if err != nil || req.Status != approval.StatusDenied || req.Resolution == nil || req.Resolution.ReceiptID == "" {
		t.Fatalf("after the reload to deny_quorum = 1 the denied call is %+v (%v), want denied with a receipt", req, err)
	}
	if rec, err := f.k.Call(denied.RequestID); err != nil || rec.Status != kernel.StatusDenied || f.disp.count(denied.RequestID) != 0 {
		t.Fatalf("call after reload: %+v %v, tool ran %d", rec, err, f.disp.count(denied.RequestID))
	}

	// quorum 2 -> 1 after parking: one approval still does not run it.
	f.k.SetPolicy(parse(quorumReloadPolicy, 2))
	kept, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"b"}`, ""))
	if err != nil || kept.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", kept, err)
	}
	if err := f.k.ApplyPolicy(ctx, parse(quorumReloadPolicy, 1)); err != nil {
		t.Fatal(err)
	}
	tok := testkit.SignToken(t, f.k, f.clock.Now(), kept.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	res, err := f.k.Respond(ctx, kept.ApprovalRequestID, tok, "", "")
	if err != nil || res.Outcome != approval.StatusPending || res.Quorum != 2 || f.disp.count(kept.RequestID) != 0 {
		t.Fatalf("after a reload to quorum = 1, one approval answered %+v (%v); the tool ran %d time(s)", res, err, f.disp.count(kept.RequestID))
	}
	tok = testkit.SignToken(t, f.k, f.clock.Now(), kept.ApprovalRequestID, cfo, approval.DecisionApproved, nil)
	if res, err = f.k.Respond(ctx, kept.ApprovalRequestID, tok, "", ""); err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("second approval: %+v %v", res, err)
	}
}
