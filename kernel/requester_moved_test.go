package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// movedPolicy: echo needs two approvals of the approvers listed in %[1]s;
// %[2]s is the requesters line.
const movedPolicy = `
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
quorum = 2
%[2]s
%[1]s
`

// A reload that moves an approver's key to requesters (separation of
// duties: the Finance Lead now asks for deploys and may no longer approve
// them) takes the vote that key already cast on a parked call out of the
// count: the second approval after the reload does not run the call on
// the moved key's word; a third approver's does.
func TestVoteOfAKeyMovedToRequestersStopsCounting(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ops, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	approver := func(k keys.PrivateKey, name string) string {
		return fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = %q\n", k.Public().String(), name)
	}
	parse := func(approvers, requesters string) *policy.Policy {
		p, err := policy.Parse([]byte(fmt.Sprintf(movedPolicy, approvers, requesters)), "moved.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.k.SetPolicy(parse(approver(financeLead, "Finance Lead")+approver(cfo, "CFO")+approver(ops, "Ops"), ""))
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"prod"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	id := out.ApprovalRequestID
	vote := func(k keys.PrivateKey) *kernel.RespondResult {
		t.Helper()
		res, err := f.k.Respond(ctx, id, testkit.SignToken(t, f.k, f.clock.Now(), id, k, approval.DecisionApproved, nil), "", "")
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := vote(financeLead); res.Outcome != approval.StatusPending {
		t.Fatalf("first of two approvals: %s", res.Outcome)
	}
	moved := parse(approver(cfo, "CFO")+approver(ops, "Ops"), fmt.Sprintf("requesters = [%q]", financeLead.Public().String()))
	if err := f.k.ApplyPolicy(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if res := vote(cfo); res.Outcome != approval.StatusPending || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("the CFO's approval beside the moved key's: %s (%d of %d), tool ran %d time(s)",
			res.Outcome, res.Approvals, res.Quorum, f.disp.count(out.RequestID))
	}
	if res := vote(ops); res.Outcome != approval.StatusApproved {
		t.Fatalf("two approvals the policy counts: %s", res.Outcome)
	}
	if rec, err := f.k.Call(out.RequestID); err != nil || rec.Status != kernel.StatusAllowed {
		t.Fatalf("call: %+v %v", rec, err)
	}
}
