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

// withoutDeploysPolicy is quorumReloadPolicy with the "deploys" grant gone
// (an operator's bad edit): its parked calls have nobody to decide them.
const withoutDeploysPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "reads"
server = "demo"
tool = "read_*"
`

// Two quick reloads: A drops the "deploys" grant by mistake, B puts it
// back. A's reconcile of a parked deploy reaches its commit only after B
// is in force and B's own reconcile has run (the hook forces that
// interleaving). A reconcile judged by a policy no longer in force must
// not win: the call once ended denied ("no approver of grant deploys may
// decide this call under the policy in force", signed under A's hash)
// while the policy in force, B, names its approvers and keeps it pending.
func TestStaleReconcileDoesNotOverrideTheNewerReload(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	parse := func(text string) *policy.Policy {
		if text == quorumReloadPolicy {
			text = fmt.Sprintf(text, financeLead.Public(), cfo.Public(), 1)
		}
		p, err := policy.Parse([]byte(text), "r.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.k.SetPolicy(parse(quorumReloadPolicy))
	var err error
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"prod"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	a, b := parse(withoutDeploysPolicy), parse(quorumReloadPolicy)
	f.k.BeforeReconcileCommit(func() {
		// Reload B lands, and reconciles, while A's reconcile waits to commit.
		if err := f.k.ApplyPolicy(ctx, b); err != nil {
			t.Error(err)
		}
	})
	if err := f.k.ApplyPolicy(ctx, a); err != nil {
		t.Fatal(err)
	}
	if f.k.Policy() != b {
		t.Fatal("B is not the policy in force")
	}
	req, err := f.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusPending {
		t.Fatalf("under policy B (in force, naming the grant's approvers) the parked call was ended by A's late reconcile: %s, %+v",
			req.Status, req.Resolution)
	}
	// And B decides it: its approver's approval runs the call.
	tok := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	res, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if err != nil || res.Outcome != approval.StatusApproved || f.disp.count(out.RequestID) != 1 {
		t.Fatalf("approval under B: %+v %v, tool ran %d time(s)", res, err, f.disp.count(out.RequestID))
	}
}

// oneApproverPolicy: echo always needs approval, decided by %[1]s alone.
const oneApproverPolicy = `
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
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
`

// Reload A adds the CFO as an approver, reload B (its key leaked) takes
// it out again; A's reconcile commits after B's. The request then named
// the CFO's key among its trusted approvers while B is in force: the set
// the channels (Slack, email, chio watch) and the audit evidence read.
func TestStaleReconcileDoesNotRestoreARemovedApprover(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	only := func() *policy.Policy {
		p, err := policy.Parse([]byte(fmt.Sprintf(oneApproverPolicy, financeLead.Public())), "one.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.k.SetPolicy(only())
	var err error
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"prod"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	a, err := policy.Parse([]byte(fmt.Sprintf(quorumReloadPolicy, financeLead.Public(), cfo.Public(), 1)), "a.toml")
	if err != nil {
		t.Fatal(err)
	}
	b := only()
	f.k.BeforeReconcileCommit(func() {
		if err := f.k.ApplyPolicy(ctx, b); err != nil {
			t.Error(err)
		}
	})
	if err := f.k.ApplyPolicy(ctx, a); err != nil {
		t.Fatal(err)
	}
	req, err := f.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Trusts(cfo.Public().String()) {
		t.Fatalf("policy B (in force) removed the CFO, yet the request trusts %v after A's late reconcile", req.TrustedApprovers)
	}
	// The CFO's vote is refused: votes are judged by the policy in force.
	tok := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, cfo, approval.DecisionApproved, nil)
	if res, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err == nil || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("the removed CFO's approval answered %+v; the tool ran %d time(s)", res, f.disp.count(out.RequestID))
	}
}
