package kernel_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// escalatingPolicy: tier 0 is the Finance Lead (600 s), tier 1 the CFO.
const escalatingPolicy = `
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["Finance Lead"]
timeout_seconds = 600
[[grants.approval.escalation.tiers]]
approvers = ["CFO"]
timeout_seconds = 3600
`

// A deadline's escalation is judged by the policy in force when it
// commits. Expire reads the timeout action before the escalation's
// commit; a reload between the two that ends escalation (the platform
// team now wants unanswered calls denied at the deadline) once escalated
// anyway: the request got a new tier and a new deadline, and an approver
// could still approve it after the deadline at which the policy in force
// denies it.
func TestEscalationHonoursAReloadBeforeItsCommit(t *testing.T) {
	text := fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "escalate")
	head := text[:strings.LastIndex(text, "[[grants.approval.approvers]]")]
	escalating, err := policy.Parse([]byte(head+fmt.Sprintf(escalatingPolicy, financeLead.Public(), cfo.Public())), "escalate.toml")
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	disp := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: escalating, Dispatcher: disp, Clock: fake, Server: "pay", Grants: []string{"refunds"}})
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	// The reload lands after Expire chose to escalate, before its commit.
	deny := quorumPolicy(t, 1, 1, "deny")
	w.Kernel.BeforeEscalationCommit(func() { w.Kernel.SetPolicy(deny) })
	events, cancel, ok := w.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	defer cancel()
	fake.Advance(601 * time.Second)
	// The deadline either escalates the request or ends it.
	for acted := false; !acted; {
		select {
		case e := <-events:
			acted = e.Approval != nil && (e.Type == kernel.EventApprovalEscalated || e.Type == kernel.EventApprovalResolved)
		case <-time.After(5 * time.Second):
			t.Fatal("the deadline did nothing")
		}
	}
	r, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil || r.Status != approval.StatusExpired {
		t.Fatalf("at the deadline, under timeout_action = deny (reloaded before the escalation committed), the request is %s at tier %d, deadline %s (err %v)",
			r.Status, r.Tier, time.Unix(r.ExpiresAt, 0).UTC(), err)
	}
}

// The converse: a deadline whose action is deny, and a reload landing
// after Expire chose to deny, before the denial commits, that answers the
// deadline with an escalation (the platform team now wants unanswered
// calls sent to the CFO rather than denied). The action in force when
// the deadline's decision commits applies, as for an escalation: the
// denial once committed anyway, under the policy the reload put in force
// (its hash on the deny receipt), whose timeout action is escalate.
func TestTimeoutDenyHonoursAReloadBeforeItsCommit(t *testing.T) {
	text := fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "escalate")
	head := text[:strings.LastIndex(text, "[[grants.approval.approvers]]")]
	escalating, err := policy.Parse([]byte(head+fmt.Sprintf(escalatingPolicy, financeLead.Public(), cfo.Public())), "escalate.toml")
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	disp := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "deny"), Dispatcher: disp, Clock: fake, Server: "pay", Grants: []string{"refunds"}})
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	w.Kernel.BeforeTimeoutDenyCommit(func() { w.Kernel.SetPolicy(escalating) })
	events, cancel, ok := w.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	defer cancel()
	fake.Advance(601 * time.Second)
	for acted := false; !acted; {
		select {
		case e := <-events:
			acted = e.Approval != nil && (e.Type == kernel.EventApprovalEscalated || e.Type == kernel.EventApprovalResolved)
		case <-time.After(5 * time.Second):
			t.Fatal("the deadline did nothing")
		}
	}
	r, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil || r.Status != approval.StatusPending || r.Tier != 1 {
		msg := ""
		if r != nil && r.Resolution != nil {
			if rec, err := w.Kernel.Call(out.RequestID); err == nil && rec.ReceiptID != "" {
				msg = fmt.Sprintf("; its %s receipt names policy %s (the escalating policy in force is %s)",
					rec.Guard, testkit.ReadReceipt(t, w.Store, w.KernelKey.Public(), rec.ReceiptID).PolicyHash, escalating.Hash)
			}
		}
		t.Fatalf("at the deadline, under timeout_action = escalate (reloaded before the denial committed), the request is %s at tier %d (err %v)%s",
			r.Status, r.Tier, err, msg)
	}
}
