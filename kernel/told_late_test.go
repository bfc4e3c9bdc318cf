package kernel_test

// Approvers told late get their time, and duplicates get the first's
// answer: a park or escalation whose commit lands after the deadline its
// call's arrival set; approvers a reload adds to a pending request; a
// duplicate of a first attempt refused before anything was written. Each
// case below describes the defect it caught (all three failed before
// their fixes).

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// lateNotifier records each notification with the approvers it carried and
// closes first on the first one.
type lateNotifier struct {
	mu    sync.Mutex
	sent  []lateNote
	first chan struct{}
	once  sync.Once
}

type lateNote struct {
	event    string
	trusted  []string
	expires  int64
	approval string
}

func (n *lateNotifier) Notify(event string, req *approval.Request) {
	n.mu.Lock()
	n.sent = append(n.sent, lateNote{event: event, trusted: slices.Clone(req.TrustedApprovers), expires: req.ExpiresAt, approval: req.ApprovalID})
	n.mu.Unlock()
	if n.first != nil {
		n.once.Do(func() { close(n.first) })
	}
}

func (n *lateNotifier) notes() []lateNote {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.sent)
}

// lateSlowParkStore: Update number slowAt (from 1) takes `slow` of the
// kernel's (fake) clock before it commits (a loaded store, a PostgreSQL
// commit waiting on a lock, or a wall clock stepped forward meanwhile).
// After it, the next View waits until gate closes (so the deadline's read
// happens after the announcement has started, as it nearly always does).
type lateSlowParkStore struct {
	kernel.Store
	clk    *clock.Fake
	n      atomic.Int64
	slowAt int64
	slow   time.Duration
	hold   atomic.Bool
	gate   chan struct{}
}

func (s *lateSlowParkStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.n.Add(1) == s.slowAt {
		s.clk.Advance(s.slow)
		err := s.Store.Update(ctx, fn)
		s.hold.Store(true)
		return err
	}
	return s.Store.Update(ctx, fn)
}

func (s *lateSlowParkStore) View(fn func(kernel.ReadTx) error) error {
	if s.hold.CompareAndSwap(true, false) {
		select {
		case <-s.gate:
		case <-time.After(2 * time.Second):
		}
	}
	return s.Store.View(fn)
}

// A park whose commit completes after its own deadline (ExpiresAt is
// fixed from Submit's start time) is announced by announceDurably, which
// marks it told WITHOUT moving the deadline, and the deadline that is
// already due then acts at once: with auto_approve_advisory the call is
// auto-approved and run the instant the approvers are first notified. The
// rule (docs/platform.md "Reload": "no deadline action applies to a tier
// whose approvers were never told ... gives them the tier's full timeout
// from then") is kept by announceIfUntold but not by announceDurably, and
// 091221c's `announcing` skip makes the deadline treat "being told right
// now" as "told".
func TestParkCommittedPastItsDeadlineGivesApproversTheirTime(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	notes := &lateNotifier{first: make(chan struct{})}
	st := &lateSlowParkStore{clk: fake, slowAt: 2, slow: 700 * time.Second, gate: notes.first} // 1: batch claim, 2: the park
	disp := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "auto_approve_advisory"), Dispatcher: disp,
		Clock: fake, Server: "pay", Grants: []string{"refunds"}, Notifier: notes, CapabilityTTL: 24 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	out, err := w.Kernel.Submit(context.Background(), c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	// The fake clock does not move any more: whatever runs now runs with
	// the approvers having had zero seconds since they were first told.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && len(disp.got(c.RequestID)) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(disp.got(c.RequestID)); n != 0 {
		t.Fatalf("the approvers were first notified at %d (notifications: %+v) and the call was auto-approved and run %d time(s) "+
			"at that same instant: its deadline %d had passed while the park committed, and announceDurably marked it told "+
			"without giving the approvers any time", fake.Now().Unix(), notes.notes(), n, out.Deadline)
	}
}

// lateOnlyApprover: one approver (%[1]s, "%[2]s"), auto_approve_advisory.
const lateOnlyApprover = `
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
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "%[2]s"
`

// A reload that replaces a pending request's approvers (Finance Lead out,
// CFO in) reconciles the request (approvers.go reconcile: only an events
// publish, never the notifier) and leaves Notified as it was: the new
// approvers, the only people who can now decide, are never told through
// any channel, yet the request counts as told, so at the deadline
// auto_approve_advisory runs the call. The old approvers, who were told,
// can no longer refuse it.
func TestReloadedApproversAreToldBeforeAnAdvisoryDeadline(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	notes := &lateNotifier{}
	disp := &argsDispatcher{}
	p1, err := policy.Parse([]byte(fmt.Sprintf(lateOnlyApprover, financeLead.Public(), "Finance Lead")), "p1.toml")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := policy.Parse([]byte(fmt.Sprintf(lateOnlyApprover, cfo.Public(), "CFO")), "p2.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.NewWorld(t, testkit.Options{Policy: p1, Dispatcher: disp, Clock: fake, Server: "pay", Grants: []string{"refunds"},
		Notifier: notes, CapabilityTTL: 24 * time.Hour})
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	fake.Advance(60 * time.Second)
	if err := w.Kernel.ApplyPolicy(context.Background(), p2); err != nil {
		t.Fatal(err)
	}
	req, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil || req.Status != approval.StatusPending || !slices.Equal(req.TrustedApprovers, []string{cfo.Public().String()}) {
		t.Fatalf("setup: after the reload the request should be pending with only the CFO trusted: %+v %v", req, err)
	}
	fake.Advance(600 * time.Second)
	eventually(t, "deadline handled", func() bool {
		r, _ := w.Kernel.Approval(out.ApprovalRequestID)
		return r.Status != approval.StatusPending || len(disp.got(out.RequestID)) > 0 || cfoTold(notes)
	})
	time.Sleep(100 * time.Millisecond)
	w.Kernel.WaitSettles()
	if n := len(disp.got(out.RequestID)); n > 0 && !cfoTold(notes) {
		t.Fatalf("the call was auto-approved and run %d time(s) at the deadline, yet the CFO, since the reload the only approver "+
			"who may decide it, was never notified (notifications: %+v)", n, notes.notes())
	}
}

func cfoTold(n *lateNotifier) bool {
	for _, s := range n.notes() {
		if s.event != kernel.EventApprovalResolved && slices.Contains(s.trusted, cfo.Public().String()) {
			return true
		}
	}
	return false
}

// lateRefusingStore: the Update after arm waits for release, then refuses
// BEFORE writing anything (kernel.ErrNotCommitted: a failed bolt store, a
// closed commit queue).
type lateRefusingStore struct {
	kernel.Store
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *lateRefusingStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.armed.CompareAndSwap(true, false) {
		close(s.entered)
		<-s.release
		return fmt.Errorf("%w (%w): store failed", kernel.ErrUnavailable, kernel.ErrNotCommitted)
	}
	return s.Store.Update(ctx, fn)
}

// The reverse of cdd2123: a duplicate of a request id whose first attempt
// was refused before anything was written (503: nothing was allowed, the
// client may re-submit) is answered outcome_unknown (500: "it may have
// run"; retry.go replay: any failed read of the record, ErrNotFound
// included). Two answers to the same call contradict each other; a client
// that saw the duplicate's answer treats a call that can never run as
// possibly run (an operator reconciles a payment that never happened, the
// MCP gateway tells the model not to retry).
func TestDuplicateOfARefusedFirstAttemptGetsTheSameRefusal(t *testing.T) {
	st := &lateRefusingStore{entered: make(chan struct{}), release: make(chan struct{})}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: lostCommitPlainPolicy, Clock: clk, Dispatcher: disp,
		Agent: testkit.Key(agentK), Grants: []string{"deploys"}, CapabilityTTL: 24 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	k := w.Kernel
	call := testkit.NewCall(t, agentK, w.CapRaw, "demo", "echo", `{"amount":450}`, "", clk.Now())
	dup := *call
	st.armed.Store(true)
	firstErr := make(chan error, 1)
	go func() { _, err := k.Submit(context.Background(), call); firstErr <- err }()
	<-st.entered
	dupErr := make(chan error, 1)
	go func() { _, err := k.Submit(context.Background(), &dup); dupErr <- err }()
	time.Sleep(200 * time.Millisecond) // the duplicate waits for the first
	close(st.release)
	e1, e2 := <-firstErr, <-dupErr
	if !readsAsUnavailable(e1) {
		t.Fatalf("setup: the first attempt should be 'unavailable' (nothing written): %v", e1)
	}
	if _, err := k.Call(call.RequestID); !errors.Is(err, kernel.ErrNotFound) {
		t.Fatalf("setup: a record exists: %v", err)
	}
	if errors.Is(e2, kernel.ErrOutcomeUnknown) {
		t.Fatalf("the first attempt was answered %q (nothing was allowed, no record exists), but its duplicate %q "+
			"(outcome_unknown: it may have run)", e1, e2)
	}
}
