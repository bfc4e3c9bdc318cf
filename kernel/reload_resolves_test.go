package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// parkForTwo parks a deploy under quorumReloadPolicy with approvers first
// and second at quorum 2, and returns the policy parser and the park.
func parkForTwo(t *testing.T, f *fixture) (func(a, b keys.PrivateKey) *policy.Policy, *kernel.Outcome) {
	t.Helper()
	parse := func(a, b keys.PrivateKey) *policy.Policy {
		p, err := policy.Parse([]byte(fmt.Sprintf(quorumReloadPolicy, a.Public(), b.Public(), 2)), "q.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.k.SetPolicy(parse(financeLead, cfo))
	var err error
	f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(context.Background(), f.call(t, "echo", `{"deploy":"prod"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	return parse, out
}

// vote records approver's approval and wants the request still pending.
func votePending(t *testing.T, f *fixture, out *kernel.Outcome, approver keys.PrivateKey) {
	t.Helper()
	tok := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, approver, approval.DecisionApproved, nil)
	if res, err := f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("approval: %+v %v", res, err)
	}
}

// A reload that makes the approvals already recorded meet the quorum in
// force resolves the request then, as the vote that met it would have:
// quorum 2, the Finance Lead approves, a reload takes their key out (their
// vote stops counting), the CFO approves (1 of 2), and a reload trusts the
// Finance Lead again: 2 of 2 under the policy in force. Both approvers
// have voted, so no "next approving vote" can come: the request once sat
// pending, showing 2 of 2, until its deadline DENIED the call the policy
// in force approves.
func TestReloadMeetingTheQuorumResolvesTheRequest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	parse, out := parkForTwo(t, f)
	votePending(t, f, out, financeLead)
	if err := f.k.ApplyPolicy(ctx, parse(sre, cfo)); err != nil {
		t.Fatal(err)
	}
	votePending(t, f, out, cfo)
	restored := parse(financeLead, cfo)
	if err := f.k.ApplyPolicy(ctx, restored); err != nil {
		t.Fatal(err)
	}
	if err := f.k.WaitRecovery(ctx); err != nil { // the approved call runs in the background
		t.Fatal(err)
	}
	req, err := f.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusApproved || f.disp.count(out.RequestID) != 1 {
		f.clock.Advance(11 * time.Minute) // its deadline
		if err := f.k.Expire(ctx, out.ApprovalRequestID); err != nil {
			t.Log(err)
		}
		late, _ := f.k.Approval(out.ApprovalRequestID)
		t.Fatalf("after the reload the approvals meet the quorum in force (2 of 2), yet the request is %s and the tool ran %d time(s); at its deadline it became %s (%+v)",
			req.Status, f.disp.count(out.RequestID), late.Status, late.Resolution)
	}
	if req.Resolution == nil || req.Resolution.DecidedBy != "CFO" || req.Resolution.TokenID != req.Votes[1].TokenID {
		t.Fatalf("resolution %+v: want decided by the CFO's vote, the latest that counts", req.Resolution)
	}
	rec, err := f.k.Call(out.RequestID)
	if err != nil || rec.Status != kernel.StatusAllowed || rec.ReceiptID == "" {
		t.Fatalf("call after the reload: %+v %v", rec, err)
	}
	r := f.receipt(t, rec.DecisionReceiptID)
	if r.Decision.Verdict != "allow" || r.PolicyHash != restored.Hash || r.Metadata["approver"] != cfo.Public().String() {
		t.Fatalf("allow receipt %+v: want the policy in force's hash %s and the deciding vote", r, restored.Hash)
	}
	if voters, _ := r.Metadata["approvers"].([]any); len(voters) != 2 {
		t.Fatalf("allow receipt names approvers %v, want both votes", r.Metadata["approvers"])
	}
}

// The same, raced: reload A trusts the Finance Lead again (2 of 2), and
// reload B, landing before A's reconcile commits, takes their key out
// once more. A reconcile by A, no longer in force, must not run the call
// on a vote the policy in force does not count.
func TestStaleReloadDoesNotResolveTheRequest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	parse, out := parkForTwo(t, f)
	votePending(t, f, out, financeLead)
	if err := f.k.ApplyPolicy(ctx, parse(sre, cfo)); err != nil {
		t.Fatal(err)
	}
	votePending(t, f, out, cfo)
	a, b := parse(financeLead, cfo), parse(sre, cfo)
	f.k.BeforeReconcileCommit(func() {
		if err := f.k.ApplyPolicy(ctx, b); err != nil {
			t.Error(err)
		}
	})
	if err := f.k.ApplyPolicy(ctx, a); err != nil {
		t.Fatal(err)
	}
	req, err := f.k.Approval(out.ApprovalRequestID)
	if err != nil || req.Status != approval.StatusPending || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("under B (the Finance Lead untrusted: 1 of 2) the request is %+v (%v) and the tool ran %d time(s)",
			req, err, f.disp.count(out.RequestID))
	}
}

// threeApproversPolicy: quorum 2, deny_quorum 2, approvers %[1]s..%[3]s
// (%[4]s names the third approver line, or nothing).
const threeApproversPolicy = `
[[servers]]
id = "pay"
transport = "builtin"

[[grants]]
id = "refunds"
server = "pay"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = 2
deny_quorum = 2
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
[[grants.approval.approvers]]
public_key = "%[3]s"
display_name = "SRE"
%[1]s`

// A reload approves a request whose latest vote is not the deciding one
// (a denial below deny_quorum came last), and chiod dies after that
// commit, before the resume. The restart's recovery must take the vote
// the resolution names, not the latest: it once passed the SRE's DENIAL
// as the approving vote, and the signed allow receipt named the SRE, who
// refused, as the call's approver.
func TestRecoveryOfAReloadApprovalNamesItsDecidingVote(t *testing.T) {
	lead := fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Finance Lead\"\n", financeLead.Public())
	text := func(withLead bool) string {
		if withLead {
			return fmt.Sprintf(threeApproversPolicy, lead, cfo.Public(), sre.Public())
		}
		return fmt.Sprintf(threeApproversPolicy, "", cfo.Public(), sre.Public())
	}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	cs := &crashStore{}
	r := &crashRig{cs: cs, clock: fake}
	r.tool = &countingTool{t: t, store: func() kernel.Store { return r.w.Store }}
	r.w = testkit.NewWorld(t, testkit.Options{PolicyTOML: text(true), Dispatcher: r.tool, Clock: fake, Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	ctx := context.Background()
	parse := func(withLead bool) *policy.Policy {
		p, err := policy.Parse([]byte(text(withLead)), "p.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := r.w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	out, err := r.w.Kernel.Submit(ctx, c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	id := out.ApprovalRequestID
	vote := func(k keys.PrivateKey, decision string) {
		t.Helper()
		if res, err := r.w.Kernel.Respond(ctx, id, r.w.Token(t, id, k, decision, nil), "", ""); err != nil || res.Outcome != approval.StatusPending {
			t.Fatalf("vote: %+v %v", res, err)
		}
	}
	vote(financeLead, approval.DecisionApproved)
	if err := r.w.Kernel.ApplyPolicy(ctx, parse(false)); err != nil {
		t.Fatal(err)
	}
	vote(cfo, approval.DecisionApproved)
	vote(sre, approval.DecisionDenied) // 1 denial of 2: the latest vote
	r.w.Kernel.WaitSettles()
	// The reload's approval commits, and chiod dies before answering it.
	cs.durable, cs.crashAt = true, cs.n.Load()+1
	_ = r.w.Kernel.ApplyPolicy(ctx, parse(true))
	cs.crashAt = 0
	k := r.restart(t)
	rec := settledEventually(t, r, k, c.RequestID)
	if rec == nil || rec.Status != kernel.StatusAllowed || len(r.tool.deliveries(c.RequestID)) != 1 {
		t.Fatalf("after the restart the call is %+v, delivered %d time(s)", rec, len(r.tool.deliveries(c.RequestID)))
	}
	receipt := testkit.ReadReceipt(t, r.w.Store, r.w.KernelKey.Public(), rec.DecisionReceiptID)
	if receipt.Metadata["approver"] != cfo.Public().String() {
		t.Fatalf("the allow receipt names approver %v (%v), want the CFO, whose approval decided", receipt.Metadata["approver_display_name"], receipt.Metadata["approver"])
	}
}

// gatedTool holds every dispatch until open is closed.
type gatedTool struct {
	open    chan struct{}
	reached chan string
}

func (d *gatedTool) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	d.reached <- r.RequestID
	<-d.open
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

// chiod restarts with a file that trusts an earlier voter again: start-up
// reconciles the pending request, which the votes recorded now approve.
// The call runs, but in the background, as every call recovery finishes:
// a tool that hangs must not hold start-up (Recover). It once ran the
// call synchronously inside Recover.
func TestStartUpApprovalRunsInTheBackground(t *testing.T) {
	lead := fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Finance Lead\"\n", financeLead.Public())
	withLead := fmt.Sprintf(threeApproversPolicy, lead, cfo.Public(), sre.Public())
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: withLead, Dispatcher: &fakeDispatcher{}, Clock: fake, Server: "pay", Grants: []string{"refunds"}})
	ctx := context.Background()
	without, err := policy.Parse([]byte(fmt.Sprintf(threeApproversPolicy, "", cfo.Public(), sre.Public())), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	out, err := w.Kernel.Submit(ctx, c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	id := out.ApprovalRequestID
	vote := func(k keys.PrivateKey) {
		t.Helper()
		if res, err := w.Kernel.Respond(ctx, id, w.Token(t, id, k, approval.DecisionApproved, nil), "", ""); err != nil || res.Outcome != approval.StatusPending {
			t.Fatalf("vote: %+v %v", res, err)
		}
	}
	vote(financeLead)
	if err := w.Kernel.ApplyPolicy(ctx, without); err != nil {
		t.Fatal(err)
	}
	vote(cfo)
	w.Kernel.Close()

	tool := &gatedTool{open: make(chan struct{}), reached: make(chan string, 1)}
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.Store, Dispatcher: tool, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	recovered := make(chan error, 1)
	go func() { recovered <- k.Recover(ctx) }()
	if got := <-tool.reached; got != c.RequestID {
		t.Fatalf("dispatched %s", got)
	}
	select {
	case err := <-recovered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(tool.open)
		t.Fatal("start-up (Recover) waited for the approved call's tool, which was holding it")
	}
	close(tool.open)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := k.WaitRecovery(wctx); err != nil {
		t.Fatal(err)
	}
	k.WaitSettles()
	if rec, err := k.Call(c.RequestID); err != nil || rec.Status != kernel.StatusAllowed {
		t.Fatalf("after start-up the call is %+v (%v), want allowed", rec, err)
	}
}
