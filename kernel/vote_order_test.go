package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// voteOrderPolicy: pay/issue_refund always needs approval, arguments
// exposed (amendable), two approvers; %[3]d = quorum, %[4]d = deny_quorum,
// %[5]s = timeout_action.
const voteOrderPolicy = `
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
expose_arguments = true
timeout_seconds = 600
timeout_action = "%[5]s"
quorum = %[3]d
deny_quorum = %[4]d
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
`

func quorumPolicy(t *testing.T, q, dq int, action string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), q, dq, action)), "vote-order.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// argsDispatcher records what the tool received.
type argsDispatcher struct {
	mu   sync.Mutex
	args map[string][]json.RawMessage
}

func (d *argsDispatcher) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.args == nil {
		d.args = map[string][]json.RawMessage{}
	}
	d.args[r.RequestID] = append(d.args[r.RequestID], append(json.RawMessage(nil), r.Arguments...))
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

func (d *argsDispatcher) got(id string) []json.RawMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.args[id]
}

// gatedStore blocks the next Update after arm() until release.
type gatedStore struct {
	kernel.Store
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
	// beforeView, if set, runs once before the next View.
	beforeView atomic.Pointer[func()]
}

func (s *gatedStore) arm() {
	s.reached, s.release = make(chan struct{}), make(chan struct{})
	s.armed.Store(true)
}

func (s *gatedStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.armed.CompareAndSwap(true, false) {
		close(s.reached)
		<-s.release
	}
	return s.Store.Update(ctx, fn)
}

func (s *gatedStore) View(fn func(kernel.ReadTx) error) error {
	if f := s.beforeView.Swap(nil); f != nil {
		(*f)()
	}
	return s.Store.View(fn)
}

// cc43baf: "a reload to deny_quorum = 1 left a call a human had refused
// pending until a second approver ran it" -- it still does when the second
// approver's vote lands after the reload is in force (SetPolicy) but before
// ApplyPolicy's reconcile loop has reached this request (or when that
// reconcile commit fails: ApplyPolicy only logs it). recordVote counts the
// quorums in force but tests approvals BEFORE denials, so one approval
// (quorum 1) wins over a denial that already meets the deny_quorum in force.
func TestApprovalDuringReloadNeverOverridesRecordedDenial(t *testing.T) {
	gs := &gatedStore{}
	disp := &argsDispatcher{}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 2, "deny"), Dispatcher: disp, Clock: fake,
		Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	// The CFO refuses; under deny_quorum = 2 the call stays pending.
	deny := w.Token(t, out.ApprovalRequestID, cfo, approval.DecisionDenied, nil)
	if res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, deny, "", ""); err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("deny: %+v %v", res, err)
	}
	// The operator reloads deny_quorum = 1 ("any one refusal stops it").
	// Its reconcile commit for this request is held (a busy store, or
	// many pending requests reconciled one commit at a time).
	gs.arm()
	done := make(chan error, 1)
	go func() { done <- w.Kernel.ApplyPolicy(ctx, quorumPolicy(t, 1, 1, "deny")) }()
	<-gs.reached
	// Meanwhile the Finance Lead approves: the policy in force says the
	// CFO's recorded refusal already ended the call.
	approve := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, approve, "", "")
	close(gs.release)
	if aerr := <-done; aerr != nil {
		t.Fatal(aerr)
	}
	if n := len(disp.got(out.RequestID)); n != 0 || (err == nil && res.Outcome == approval.StatusApproved) {
		t.Fatalf("a call refused by the CFO ran %d time(s) (outcome %+v, err %v) although deny_quorum = 1 was in force when the approval landed",
			n, res, err)
	}
}

// Respond checks an amendment against the quorum in force when the token
// is presented (quorum 1), recordVote counts against the quorum in force at
// its commit. A reload to quorum 2 between the two records the amended
// approval as ONE of two plain approvals; the second approver's (plain)
// token resolves the request and the call runs with the ORIGINAL
// arguments: the Finance Lead's signature, given for a 100 USD refund,
// counts toward a 500 USD one (an approver approves less than the tool
// receives).
func TestAmendedVoteNeverCountsTowardUnamendedCall(t *testing.T) {
	gs := &gatedStore{}
	disp := &argsDispatcher{}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "deny"), Dispatcher: disp, Clock: fake,
		Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	amended := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, func(tok *approval.Token) {
		tok.AmendedArguments = json.RawMessage(`{"amount":100,"currency":"USD","customer_id":"c"}`)
	})
	// Respond reads the request (View 1), verifies, reads the call for the
	// amendment check (View 2), then recordVote commits. The operator's
	// reload (quorum 1 -> 2) lands just before that second read.
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, quorumPolicy(t, 2, 1, "deny")); err != nil {
				t.Error(err)
			}
			return
		}
		gs.beforeView.Store(&hook)
	}
	gs.beforeView.Store(&hook)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, amended, "", "")
	if err != nil {
		t.Logf("amended vote refused (fixed behaviour): %v", err)
		return
	}
	if res.Outcome != approval.StatusPending {
		t.Fatalf("amended vote: %+v", res)
	}
	plain := w.Token(t, out.ApprovalRequestID, cfo, approval.DecisionApproved, nil)
	res, err = w.Kernel.Respond(ctx, out.ApprovalRequestID, plain, "", "")
	if err != nil {
		t.Fatal(err)
	}
	got := disp.got(out.RequestID)
	req, _ := w.Kernel.Approval(out.ApprovalRequestID)
	if len(got) == 1 && string(got[0]) != `{"amount":100,"currency":"USD","customer_id":"c"}` {
		t.Fatalf("the tool received %s; the Finance Lead signed only for amount 100 (an amendment), yet the vote counted toward the original call (votes: %d, outcome %s)",
			got[0], len(req.Votes), res.Outcome)
	}
}

// recordingNotifier records what channels were told.
type recordingNotifier struct {
	mu     sync.Mutex
	events map[string][]string
}

func (n *recordingNotifier) Notify(event string, req *approval.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.events == nil {
		n.events = map[string][]string{}
	}
	n.events[req.ApprovalID] = append(n.events[req.ApprovalID], event)
}

func (n *recordingNotifier) told(id string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.events[id]...)
}

// 2ad914e: "a commit reported failed may still reach the disk": the heal
// hook now announces what such a commit parked, but Recover marks EVERY
// pending request "told" without announcing it. A park whose commit landed
// while reported failed (or chiod killed between the park commit and
// announce) followed by a restart rather than a heal: no approver is ever
// told. With timeout_action = auto_approve_advisory the call then runs at
// the deadline without any human having been asked.
func TestRestartAnnouncesAParkNobodyWasToldOf(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	cs := &crashStore{crashAt: 2, durable: true} // update 1: standing-approval claim, 2: the park; then dead
	disp := &argsDispatcher{}
	first := &recordingNotifier{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "auto_approve_advisory"), Dispatcher: disp,
		Clock: fake, Server: "pay", Grants: []string{"refunds"}, Notifier: first,
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	ctx := context.Background()
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if _, err := w.Kernel.Submit(ctx, c); !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("park: %v", err)
	}
	w.Kernel.Close()
	// chiod restarts on the same (healthy) bbolt file.
	second := &recordingNotifier{}
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.Store, Dispatcher: disp, Clock: fake, Notifier: second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := k.Call(c.RequestID)
	if err != nil || rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("parked call after restart: %+v %v", rec, err)
	}
	if len(first.told(rec.ApprovalID))+len(second.told(rec.ApprovalID)) == 0 {
		fake.Advance(700 * time.Second)
		time.Sleep(100 * time.Millisecond)
		t.Fatalf("pending request %s was never announced to any approver (before or after the restart); at the deadline it was auto-approved and the tool ran %d time(s)",
			rec.ApprovalID, len(disp.got(c.RequestID)))
	}
}
