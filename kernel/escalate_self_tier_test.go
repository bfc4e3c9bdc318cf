package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// selfTierPolicy: refunds escalate from tier 1, "On-call" (%[1]s, 600 s,
// dashboard), to tier 2, "Security" (%[2]s, 3600 s, terminal), then deny.
const selfTierPolicy = `
[[servers]]
id = "pay"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
delivery = "at_least_once"
amount = "/amount"
currency = "/currency"

[[grants]]
id = "refunds"
server = "pay"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
timeout_action = "escalate"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "On-call"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "Security"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["On-call"]
channels = ["dashboard"]
timeout_seconds = 600
[[grants.approval.escalation.tiers]]
approvers = ["Security"]
channels = ["terminal"]
timeout_seconds = 3600
`

func selfTier(t *testing.T, onCall, security string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(fmt.Sprintf(selfTierPolicy, onCall, security)), "self-tier.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// selfTierWithLead is selfTier with On-call the agent's key, and the
// Finance Lead beside Security in tier 2.
func selfTierWithLead(t *testing.T) *policy.Policy {
	t.Helper()
	text := strings.NewReplacer(`approvers = ["Security"]`, `approvers = ["Security", "Finance Lead"]`,
		"[grants.approval.escalation]\n", fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Finance Lead\"\n[grants.approval.escalation]\n", financeLead.Public()),
	).Replace(fmt.Sprintf(selfTierPolicy, agentK.Public(), cfo.Public()))
	p, err := policy.Parse([]byte(text), "self-tier-lead.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// eventsNotifier records what channels were told.
type eventsNotifier struct {
	ch chan string
}

func (n *eventsNotifier) Notify(event string, req *approval.Request) {
	n.ch <- fmt.Sprintf("%s tier=%d channels=%v", event, req.Tier, req.Channels)
}

func (n *eventsNotifier) next(t *testing.T) string {
	t.Helper()
	select {
	case e := <-n.ch:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no channel was told")
		return ""
	}
}

// wantPassedOver checks that r waits at tier 2 (index 1) for Security,
// with tier 2's time from at, and says why tier 1 was passed over.
func wantPassedOver(t *testing.T, r *approval.Request, at time.Time) {
	t.Helper()
	if r.Status != approval.StatusPending || r.Tier != 1 || !slices.Contains(r.TrustedApprovers, cfo.Public().String()) {
		t.Fatalf("request %s at tier index %d trusting %v, want pending at tier index 1 trusting Security", r.Status, r.Tier, r.TrustedApprovers)
	}
	if want := at.Unix() + 3600; r.ExpiresAt != want {
		t.Fatalf("deadline %s, want tier 2's 3600 s: %s", time.Unix(r.ExpiresAt, 0).UTC(), time.Unix(want, 0).UTC())
	}
	// As stored and served (GET /approvals/{id}, the views' source).
	var stored struct {
		Skipped []int `json:"skipped_tiers"`
	}
	if raw, err := json.Marshal(r); err != nil || json.Unmarshal(raw, &stored) != nil || !slices.Equal(stored.Skipped, []int{0}) {
		t.Fatalf("skipped_tiers %v: the request must record that tier 1 was passed over", stored.Skipped)
	}
}

// An escalating grant whose first tier holds only the calling agent's own
// key (the kernel never counts an agent's vote on its own call), and whose
// second tier holds Security: nobody may decide the call at tier 1, but
// Security may at tier 2. The call was denied at once (guard
// approval-policy), as if no tier had anyone; it is passed over to tier 2
// at once, told to tier 2's channels as an escalation, recorded on the
// request and on the park's receipt.
func TestSelfOnlyFirstTierIsPassedOver(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	n := &eventsNotifier{ch: make(chan string, 8)}
	w := testkit.NewWorld(t, testkit.Options{Policy: selfTier(t, agentK.Public().String(), cfo.Public().String()), Clock: fake,
		Dispatcher: &argsDispatcher{}, Notifier: n, Agent: testkit.Key(agentK), Server: "pay", Grants: []string{"refunds"}})
	at := fake.Now()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("outcome %s by %q (%s), want pending at the tier whose approvers may decide", out.Status, out.Guard, out.Reason)
	}
	r, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	wantPassedOver(t, r, at)
	if got, want := n.next(t), kernel.EventApprovalEscalated+" tier=1 channels=[terminal]"; got != want {
		t.Fatalf("channels told %q, want %q", got, want)
	}
	rec, err := w.Kernel.Call(out.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(w.Receipt(t, rec.ReceiptID).Metadata["skipped_tiers"]); got != "[0]" {
		t.Fatalf("the park's receipt records skipped tiers %s, want [0]", got)
	}
	// The agent's own vote still counts for nothing; Security decides.
	if _, err := w.Kernel.Respond(t.Context(), out.ApprovalRequestID, w.Token(t, out.ApprovalRequestID, agentK, approval.DecisionApproved, nil), "", ""); err == nil {
		t.Fatal("the agent approved its own call")
	}
	res, err := w.Kernel.Respond(t.Context(), out.ApprovalRequestID, w.Token(t, out.ApprovalRequestID, cfo, approval.DecisionApproved, nil), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("Security's approval: %+v, %v", res, err)
	}
}

// Today's rule holds: when no tier has anyone but the agent, the call is
// denied at once (here both tiers name On-call, the agent's key).
func TestEveryTierSelfOnlyIsDenied(t *testing.T) {
	text := strings.Replace(fmt.Sprintf(selfTierPolicy, agentK.Public(), cfo.Public()), `approvers = ["Security"]`, `approvers = ["On-call"]`, 1)
	p, err := policy.Parse([]byte(text), "self-tiers.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.NewWorld(t, testkit.Options{Policy: p,
		Clock: clock.NewFake(time.Unix(1_900_000_000, 0)), Dispatcher: &argsDispatcher{}, Agent: testkit.Key(agentK), Server: "pay", Grants: []string{"refunds"}})
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusDenied || out.Guard != kernel.GuardApprovalPolicy {
		t.Fatalf("outcome %s by %q, want denied by %s", out.Status, out.Guard, kernel.GuardApprovalPolicy)
	}
}

// A reload that leaves a parked call's current tier with only the agent's
// key, and Security at the next: the request is passed over to that tier
// (its full time, told as an escalation), not ended.
func TestReloadLeavingTheTierSelfOnlyPassesItOver(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	n := &eventsNotifier{ch: make(chan string, 8)}
	w := testkit.NewWorld(t, testkit.Options{Policy: selfTier(t, financeLead.Public().String(), cfo.Public().String()), Clock: fake,
		Dispatcher: &argsDispatcher{}, Notifier: n, Agent: testkit.Key(agentK), Server: "pay", Grants: []string{"refunds"}})
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	if got := n.next(t); got != kernel.EventApprovalRequested+" tier=0 channels=[dashboard]" {
		t.Fatalf("told %q", got)
	}
	fake.Advance(100 * time.Second)
	at := fake.Now()
	if err := w.Kernel.ApplyPolicy(t.Context(), selfTier(t, agentK.Public().String(), cfo.Public().String())); err != nil {
		t.Fatal(err)
	}
	r, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != approval.StatusPending {
		t.Fatalf("the reload ended the request: %s (%+v), although Security may decide it at tier 2", r.Status, r.Resolution)
	}
	wantPassedOver(t, r, at)
	if got, want := n.next(t), kernel.EventApprovalEscalated+" tier=1 channels=[terminal]"; got != want {
		t.Fatalf("channels told %q, want %q", got, want)
	}
}

// A request passed over to tier 2 keeps its deadline across a restart:
// it neither loses tier 2's time (ending at tier 1's deadline) nor
// regains it (a fresh 3600 s from the restart).
func TestPassedOverTierKeepsItsDeadlineAcrossARestart(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	p := selfTier(t, agentK.Public().String(), cfo.Public().String())
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Clock: fake, Dispatcher: &argsDispatcher{}, Agent: testkit.Key(agentK), Server: "pay", Grants: []string{"refunds"}})
	at := fake.Now()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("outcome %s by %q (%s), want pending at tier 2", out.Status, out.Guard, out.Reason)
	}
	fake.Advance(1000 * time.Second) // past tier 1's 600 s
	restartChiod(t, w)
	r, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	wantPassedOver(t, r, at)
	fake.Advance(2599 * time.Second) // one second before tier 2's deadline
	if r, _ := w.Kernel.Approval(out.ApprovalRequestID); r.Status != approval.StatusPending {
		t.Fatalf("before its deadline the request is %s", r.Status)
	}
	fake.Advance(2 * time.Second)
	for deadline := time.Now().Add(5 * time.Second); ; {
		r, _ := w.Kernel.Approval(out.ApprovalRequestID)
		if r.Status == approval.StatusExpired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after tier 2's deadline (the last tier, terminal deny) the request is %s", r.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A reload that passes a request over to a tier whose approvers include
// one who already denied it, and lowers deny_quorum to the denials
// recorded, ends it denied by that person now, as it would without the
// pass-over: not left pending at a tier nobody may decide.
func TestReloadPassingOverCountsTheNextTiersDenials(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	before := strings.Replace(fmt.Sprintf(selfTierPolicy, financeLead.Public(), cfo.Public()),
		`timeout_action = "escalate"`, "timeout_action = \"escalate\"\ndeny_quorum = 2", 1)
	p, err := policy.Parse([]byte(before), "before.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Clock: fake, Dispatcher: &argsDispatcher{}, Agent: testkit.Key(agentK), Server: "pay", Grants: []string{"refunds"}})
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	if res, err := w.Kernel.Respond(t.Context(), out.ApprovalRequestID, w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionDenied, nil), "", ""); err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("the first of two denials: %+v, %v", res, err)
	}
	// On-call is now the agent's key; the Finance Lead decides at tier 2,
	// where one denial ends a call.
	q := selfTierWithLead(t)
	if err := w.Kernel.ApplyPolicy(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	r, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != approval.StatusDenied || r.Resolution == nil || r.Resolution.Guard != kernel.GuardHumanApproval {
		t.Fatalf("after the reload the request is %s at tier index %d (%+v), want denied by %s: the Finance Lead's denial meets deny_quorum 1 at tier 2",
			r.Status, r.Tier, r.Resolution, kernel.GuardHumanApproval)
	}
}

// The same rule for a call approved but not yet decided when chiod stops
// (approved_now.go judges its votes again, "as they would a pending
// request"): restarted with a policy that leaves the approver's tier to the
// agent alone and names the approver in the next, a pending request would
// be passed over to that tier, where the approval counts, and approved.
// The approved call was denied instead: "nobody may decide".
func TestRecoveredApprovalCountsAtThePassedOverTier(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	// The fifth update would commit the allow decision (the park, its
	// announcement and the approving vote come before): chiod dies there.
	cs := &crashStore{crashAt: 5}
	tool := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: selfTier(t, financeLead.Public().String(), cfo.Public().String()), Clock: fake,
		Dispatcher: tool, Agent: testkit.Key(agentK), Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	_, _ = w.Kernel.Respond(t.Context(), out.ApprovalRequestID, w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", "")
	w.Kernel.Close()
	var left *kernel.CallRecord
	if err := w.Store.View(func(tx kernel.ReadTx) error { var err error; left, err = tx.Call(out.RequestID); return err }); err != nil {
		t.Fatal(err)
	}
	if left.Status != kernel.StatusDispatching || left.DecisionReceiptID != "" || len(tool.got(out.RequestID)) != 0 {
		t.Fatalf("the crash did not leave the call approved and undecided: %s, decision %q", left.Status, left.DecisionReceiptID)
	}
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: selfTierWithLead(t), Store: w.Store, Dispatcher: tool, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := k.WaitRecovery(wctx); err != nil {
		t.Fatal(err)
	}
	rec, err := k.Call(out.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tool.got(out.RequestID)); n != 1 || rec.Status != kernel.StatusAllowed {
		t.Fatalf("the Finance Lead's approval counts at tier 2 under the policy in force, yet the call is %s (guard %q: %s) and ran %d time(s)",
			rec.Status, rec.Guard, rec.Reason, n)
	}
}
