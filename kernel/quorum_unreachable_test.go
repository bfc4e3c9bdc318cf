package kernel_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// unreachableQuorumPolicy: echo needs 2 approvals of Lead (%s) and CFO (%s), then
// %s at the deadline.
const unreachableQuorumPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "payouts"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = 2
timeout_action = %q
[[grants.approval.approvers]]
public_key = %q
display_name = "Lead"
[[grants.approval.approvers]]
public_key = %q
display_name = "CFO"
`

// An agent running with one of a quorum-2 grant's two approvers' keys
// calls. The kernel never counts the agent's vote on its own call, so only
// one approver may decide it: the quorum of two can never be met, and the
// call could only end denied at its deadline. It parked anyway, asking the
// other approver, whose vote read "1 of 2 approvals; the call runs once 2
// have approved" — a promise nobody could keep. It is denied at once (guard
// approval-policy), as a call nobody may decide is. Under
// auto_approve_advisory it still parks: there the deadline runs it unless
// someone says no, and the other approver may.
func TestCallWhoseQuorumCannotBeMetIsDenied(t *testing.T) {
	cfo := keys.FromSeed(bytes.Repeat([]byte{41}, 32))
	for _, c := range []struct {
		action string
		want   string
	}{
		{policy.TimeoutDeny, kernel.StatusDenied},
		{policy.TimeoutAutoApproveAdvisory, kernel.StatusPendingApproval},
	} {
		f := newFixture(t)
		out := submitPayoutUnder(t, f, fmt.Sprintf(unreachableQuorumPolicy, c.action, f.agent.Public().String(), cfo.Public().String()))
		if out.Status != c.want {
			t.Errorf("timeout_action %s: the call is %s (guard %q, %q); want %s", c.action, out.Status, out.Guard, out.Reason, c.want)
			continue
		}
		if c.want == kernel.StatusDenied && (out.Guard != kernel.GuardApprovalPolicy || !strings.Contains(out.Reason, "quorum")) {
			t.Errorf("timeout_action %s: denied by %q (%q); want %s, naming the quorum", c.action, out.Guard, out.Reason, kernel.GuardApprovalPolicy)
		}
		f.disp.mu.Lock()
		if len(f.disp.calls) != 0 {
			t.Errorf("timeout_action %s: the call was sent", c.action)
		}
		f.disp.mu.Unlock()
	}
}

// escalatingQuorumPolicy: echo needs 2 approvals; Lead (%s) and CFO (%s)
// first, then CFO and CTO (%s), and then the deadline denies.
const escalatingQuorumPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "payouts"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = 2
timeout_action = "escalate"
[[grants.approval.approvers]]
public_key = %q
display_name = "Lead"
[[grants.approval.approvers]]
public_key = %q
display_name = "CFO"
[[grants.approval.approvers]]
public_key = %q
display_name = "CTO"
[grants.approval.escalation]
[[grants.approval.escalation.tiers]]
approvers = ["Lead", "CFO"]
timeout_seconds = 300
[[grants.approval.escalation.tiers]]
approvers = ["CFO", "CTO"]
timeout_seconds = 300
`

// The same agent under an escalating grant: only CFO may decide it at
// first, but once it escalates CFO and CTO may, two, the quorum. It parks.
func TestCallWhoseQuorumALaterTierMeetsParks(t *testing.T) {
	cfo := keys.FromSeed(bytes.Repeat([]byte{41}, 32))
	cto := keys.FromSeed(bytes.Repeat([]byte{42}, 32))
	f := newFixture(t)
	out := submitPayoutUnder(t, f, fmt.Sprintf(escalatingQuorumPolicy, f.agent.Public().String(), cfo.Public().String(), cto.Public().String()))
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("the call is %s (guard %q, %q); want pending_approval: its second tier can meet the quorum", out.Status, out.Guard, out.Reason)
	}
}

// A reload that leaves a parked call's quorum out of reach ends it, as it
// ends one nobody may decide any more: three approvers, the agent holding
// Lead's key, so CFO and CTO meet the quorum of two; the reload removes
// CTO. Kept parked, the call could only end denied at its deadline, while
// CFO was still told "the call runs once 2 have approved".
func TestReloadLeavingTheQuorumOutOfReachEndsTheCall(t *testing.T) {
	cfo := keys.FromSeed(bytes.Repeat([]byte{41}, 32))
	cto := keys.FromSeed(bytes.Repeat([]byte{42}, 32))
	f := newFixture(t)
	three := unreachableQuorumPolicy + `[[grants.approval.approvers]]
public_key = %q
display_name = "CTO"
`
	out := submitPayoutUnder(t, f, fmt.Sprintf(three, policy.TimeoutDeny, f.agent.Public().String(), cfo.Public().String(), cto.Public().String()))
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("the call: %+v; want it parked (CFO and CTO may meet the quorum)", out)
	}
	// The reload removes CTO.
	reloadDeniesByApprovalPolicy(t, f, fmt.Sprintf(unreachableQuorumPolicy, policy.TimeoutDeny, f.agent.Public().String(), cfo.Public().String()), out.ApprovalRequestID)
}

// submitPayoutUnder puts the policy text in force on f, gives f's agent a
// capability for grant payouts and submits one echo call under it.
func submitPayoutUnder(t *testing.T, f *fixture, toml string) *kernel.Outcome {
	t.Helper()
	return submitUnder(t, f, toml, "echo", `{"payout":"vendor"}`)
}

// submitUnder puts the policy text in force on f, gives f's agent a
// capability for grant payouts and submits one call of tool with args.
func submitUnder(t *testing.T, f *fixture, toml, tool, args string) *kernel.Outcome {
	t.Helper()
	p, err := policy.Parse([]byte(toml), "quorum.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"payouts"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(context.Background(), f.call(t, tool, args, ""))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reloadDeniesByApprovalPolicy applies the policy text on f and checks
// that it ended the parked request approvalID, denied by approval-policy.
func reloadDeniesByApprovalPolicy(t *testing.T, f *fixture, toml, approvalID string) {
	t.Helper()
	p, err := policy.Parse([]byte(toml), "quorum.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.k.ApplyPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	req, err := f.k.Approval(approvalID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusDenied || req.Resolution == nil || req.Resolution.Guard != kernel.GuardApprovalPolicy {
		t.Fatalf("after the reload the request is %s (%+v); want denied by %s", req.Status, req.Resolution, kernel.GuardApprovalPolicy)
	}
}
