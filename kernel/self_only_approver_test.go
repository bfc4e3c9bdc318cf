package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// selfOnlyPolicy: echo asks the one approver %s, and runs at the deadline
// if nobody answers (auto_approve_advisory).
const selfOnlyPolicy = `
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
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = %q
display_name = "Ops"
`

// An agent whose key is the grant's only approver (a key given two roles)
// calls: nobody may decide the request, since the kernel never counts the
// agent's vote on its own call, for or against. The kernel ends such a
// request at a reload or restart (reconcile: guard approval-policy); parked
// until then it could only time out, and here the deadline would run it
// with nobody able to say no. It is denied at once, by the same rule.
func TestCallWhoseOnlyApproverIsTheAgentIsDenied(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p, err := policy.Parse([]byte(fmt.Sprintf(selfOnlyPolicy, f.agent.Public().String())), "self.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"prod"}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != kernel.StatusDenied || out.Guard != kernel.GuardApprovalPolicy {
		// What the parked request becomes at the next reload (or restart).
		if out.Status == kernel.StatusPendingApproval {
			if err := f.k.ApplyPolicy(ctx, p); err != nil {
				t.Fatal(err)
			}
			req, _ := f.k.Approval(out.ApprovalRequestID)
			t.Fatalf("the call parked (status %s) although nobody may decide it; an unchanged reload then ended it: %s (%+v)",
				out.Status, req.Status, req.Resolution)
		}
		t.Fatalf("outcome %s by %q, want denied by %s", out.Status, out.Guard, kernel.GuardApprovalPolicy)
	}
	f.disp.mu.Lock()
	defer f.disp.mu.Unlock()
	if len(f.disp.calls) != 0 {
		t.Fatal("the call was sent")
	}
}
