package kernel_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"context"
	"errors"
	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// A crash after an attempt that may have reached the tool: recovery re-sends
// the at_least_once call and the tool (still running the first one, or its
// Dedupe guard) refuses it "busy, not delivered". The call must not be
// settled not_delivered ("the tool certainly never saw the call": the agent
// may redo it, e.g. a second refund) — the pre-crash attempt may have run.
// sendWithRetry's mayHaveRun (1947ad7) only remembers attempts made by the
// current process.
func TestResendAfterCrashIsNeverNotDelivered(t *testing.T) {
	maybe := &kernel.DeliveryError{Err: errors.New("read tcp: connection reset after the request was written")}
	tool := &scriptedTool{script: []error{maybe}}
	w := newWAWorld(t, tool)
	w.store.failNth = func(n int64) bool { return n == 2 } // the settle commit: what a kill -9 there leaves
	c := w.Call(t, "echo", `{"a":1}`, "")
	if _, err := w.Kernel.Submit(context.Background(), c); !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("first run: %v", err)
	}
	if n := len(tool.deliveries(c.RequestID)); n != 1 {
		t.Fatalf("first run: %d deliveries", n)
	}
	w.store.failNth = nil
	w.Kernel.Close() // chiod dies; its memory (the kept answer) is gone

	busy := &kernel.DeliveryError{Err: errors.New("http 503: a delivery of this Idempotency-Key is in progress"), NotDelivered: true}
	tool2 := &scriptedTool{script: []error{busy}}
	k := restart(t, w, tool2)
	if n := len(tool2.deliveries(c.RequestID)); n != 1 {
		t.Fatalf("recovery made %d deliveries", n)
	}
	rec, err := k.Call(c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Execution == kernel.ExecutionNotDelivered {
		t.Fatalf("an attempt before the crash may have reached the tool, yet recovery settled the call %q (%s)", rec.Execution, rec.ToolError)
	}
}

// ---- crash-at-each-commit harness ----

// crashStore dies at its crashAt-th update (counted from 1): with durable
// false that update never reaches the disk; with durable true it commits
// but its caller is answered an error (the process dies before the answer,
// or a sync error after the meta page was written). Every later update
// fails: the process is dead.
type crashStore struct {
	kernel.Store
	n       atomic.Int64
	crashAt int64
	durable bool
	// heals: only the crashAt-th update fails; later ones commit (a store
	// that failed one commit and healed, process alive).
	heals bool
}

func (s *crashStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	n := s.n.Add(1)
	switch {
	case s.crashAt > 0 && n > s.crashAt && !s.heals:
		return fmt.Errorf("%w: dead (update %d)", kernel.ErrUnavailable, n)
	case s.crashAt > 0 && n == s.crashAt:
		if s.durable {
			_ = s.Store.Update(ctx, fn)
		}
		return fmt.Errorf("%w: crashed at update %d", kernel.ErrUnavailable, n)
	}
	return s.Store.Update(ctx, fn)
}

// countingTool records deliveries and checks each has a durable allow decision.
type countingTool struct {
	t     *testing.T
	store func() kernel.Store
	mu    sync.Mutex
	seen  map[string][]kernel.DispatchRequest
}

func (d *countingTool) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	var rec *kernel.CallRecord
	_ = d.store().View(func(tx kernel.ReadTx) error { var err error; rec, err = tx.Call(r.RequestID); return err })
	if rec == nil || rec.Status != kernel.StatusDispatching || rec.DecisionReceiptID == "" {
		d.t.Errorf("%s reached the tool without a durable decision: %+v", r.RequestID, rec)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string][]kernel.DispatchRequest{}
	}
	d.seen[r.RequestID] = append(d.seen[r.RequestID], r)
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

func (d *countingTool) deliveries(id string) []kernel.DispatchRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]kernel.DispatchRequest(nil), d.seen[id]...)
}

const crashPolicy = `
[[servers]]
id = "pay"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
delivery = "at_most_once"
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
timeout_action = "%[2]s"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
`

type crashRig struct {
	w     *testkit.World
	cs    *crashStore
	tool  *countingTool
	clock *clock.Fake
}

func newCrashRig(t *testing.T, action string, crashAt int64, durable bool) *crashRig {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	cs := &crashStore{crashAt: crashAt, durable: durable}
	r := &crashRig{cs: cs, clock: fake}
	r.tool = &countingTool{t: t, store: func() kernel.Store { return r.w.Store }}
	r.w = testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(crashPolicy, financeLead.Public(), action), Dispatcher: r.tool,
		Clock: fake, Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	return r
}

// restartOn builds a new kernel on the same bbolt file (the dead one's
// memory is gone), recovers, and lets every deadline pass.
func (r *crashRig) restart(t *testing.T) *kernel.Kernel {
	t.Helper()
	r.w.Kernel.Close()
	k, err := kernel.New(kernel.Config{Key: r.w.KernelKey, Policy: r.w.Policy, Store: r.w.Store, Dispatcher: r.tool, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	return k
}

// settledEventually waits for the call to leave pending/dispatching,
// advancing the fake clock so that deadlines fire.
func settledEventually(t *testing.T, r *crashRig, k *kernel.Kernel, id string) *kernel.CallRecord {
	t.Helper()
	var rec *kernel.CallRecord
	for i := 0; i < 400; i++ {
		var err error
		rec, err = k.Call(id)
		if errors.Is(err, kernel.ErrNotFound) {
			return nil
		}
		if err == nil && !kernel.InFlight(rec.Status) {
			k.WaitSettles()
			return rec
		}
		if i%20 == 19 {
			r.clock.Advance(time.Hour)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("call %s still %s after restart, recovery and every deadline", id, rec.Status)
	return nil
}

// A crash at (or just after) each commit of an approved, amended
// at_most_once refund: the tool never sees a call without a durable
// decision, never sees it twice, never sees the unamended arguments once
// the approval is durable, and after the restart the call ends.
func TestCrashAtEachCommitOfAnAmendedApproval(t *testing.T) {
	for crashAt := int64(1); crashAt <= 5; crashAt++ {
		for _, durable := range []bool{false, true} {
			t.Run(fmt.Sprintf("update%d/durable=%v", crashAt, durable), func(t *testing.T) {
				r := newCrashRig(t, "deny", crashAt, durable)
				ctx := context.Background()
				c := r.w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
				out, err := r.w.Kernel.Submit(ctx, c)
				if err == nil && out.Status == kernel.StatusPendingApproval {
					id := out.ApprovalRequestID
					tok := r.w.Token(t, id, financeLead, approval.DecisionApproved, func(tk *approval.Token) {
						tk.AmendedArguments = json.RawMessage(`{"amount":100,"currency":"USD","customer_id":"c"}`)
					})
					_, _ = r.w.Kernel.Respond(ctx, id, tok, "", "")
				}
				r.w.Kernel.WaitSettles()
				k := r.restart(t)
				rec := settledEventually(t, r, k, c.RequestID)
				d := r.tool.deliveries(c.RequestID)
				if len(d) > 1 {
					t.Fatalf("at_most_once call delivered %d times", len(d))
				}
				if len(d) == 1 && string(d[0].Arguments) != `{"amount":100,"currency":"USD","customer_id":"c"}` {
					t.Fatalf("tool received %s, not the amended arguments", d[0].Arguments)
				}
				if rec != nil && rec.Status == kernel.StatusAllowed && rec.Execution == "" {
					t.Fatalf("allowed without an execution: %+v", rec)
				}
			})
		}
	}
}

// The same for auto_approve_advisory at the deadline and for escalate.
func TestCrashAtEachCommitOfADeadline(t *testing.T) {
	for _, action := range []string{"auto_approve_advisory", "deny"} {
		for crashAt := int64(0); crashAt <= 6; crashAt++ {
			for _, durable := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/update%d/durable=%v", action, crashAt, durable), func(t *testing.T) {
					r := newCrashRig(t, action, crashAt, durable)
					ctx := context.Background()
					c := r.w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
					out, err := r.w.Kernel.Submit(ctx, c)
					if err == nil && out.Status == kernel.StatusPendingApproval {
						r.clock.Advance(601 * time.Second)
						// let the first kernel's deadline run as far as it can
						for i := 0; i < 100 && r.cs.n.Load() < crashAt; i++ {
							time.Sleep(5 * time.Millisecond)
						}
						time.Sleep(20 * time.Millisecond)
					}
					r.w.Kernel.WaitSettles()
					k := r.restart(t)
					rec := settledEventually(t, r, k, c.RequestID)
					d := r.tool.deliveries(c.RequestID)
					if len(d) > 1 {
						t.Fatalf("at_most_once call delivered %d times", len(d))
					}
					if action == "deny" && len(d) != 0 {
						t.Fatalf("deny at the deadline, yet delivered")
					}
					if rec != nil && rec.Status == kernel.StatusAllowed && rec.Execution == "" {
						t.Fatalf("allowed without an execution: %+v", rec)
					}
				})
			}
		}
	}
}

// A commit reported failed may still have reached the disk (heal.go says so:
// "its decisions stand ... recovery finishes those calls"). For a parked
// call that leaves a durable pending request whose deadline was never armed
// (armTimer runs only after Update returns nil) and whose channels were
// never told. OnHeal used to run RecoverInFlight only, not Recover: until
// chiod restarted, the deadline never fired, although the agent's retry
// was told "pending_approval, deadline X".
func TestHealedParkGetsItsDeadlineAndAnnouncement(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	cs := &crashStore{crashAt: 2, durable: true, heals: true} // update 1 is the standing-approval claim, 2 the park
	tool := &countingTool{t: t}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(crashPolicy, financeLead.Public(), "deny"), Dispatcher: tool,
		Clock: fake, Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	tool.store = func() kernel.Store { return w.Store }
	ctx := context.Background()
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if _, err := w.Kernel.Submit(ctx, c); !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("park: %v", err)
	}
	events, cancel, ok := w.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	defer cancel()
	// The store heals (chiod's OnHeal runs RecoverAfterHeal); the SDK retries.
	if err := w.Kernel.RecoverAfterHeal(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := w.Kernel.Submit(ctx, c)
	if err != nil || out.Status != kernel.StatusPendingApproval || out.Deadline == 0 {
		t.Fatalf("retry: %+v %v", out, err)
	}
	// Its approvers are told once, by the heal.
	select {
	case e := <-events:
		if e.Type != kernel.EventApprovalRequested || e.Approval == nil || e.Approval.ApprovalID != out.ApprovalRequestID {
			t.Fatalf("after the heal: event %s %+v, want approval.requested for %s", e.Type, e.Approval, out.ApprovalRequestID)
		}
	case <-time.After(10 * time.Second): // a failure's bound only
		t.Fatal("the request a failed-yet-durable commit parked was never announced")
	}
	fake.Advance(2 * time.Hour) // well past the 600 s deadline (timeout_action = deny)
	// The fired deadline ends the request in its own commit: wait for it
	// (a bound for a failure only) rather than for a fixed time.
	eventually(t, fmt.Sprintf("the deadline of %s, passed two hours ago, to end it (armed timers: %d): "+
		"a request left pending until chiod restarts", out.ApprovalRequestID, w.Kernel.ArmedTimers()), func() bool {
		req, err := w.Kernel.Approval(out.ApprovalRequestID)
		if err != nil {
			t.Fatal(err)
		}
		return req.Status != approval.StatusPending
	})
}

// Variant of the first test: the agent was answered "succeeded" before the
// settle commit (at_least_once, settling.go); chiod dies before that commit.
// Recovery re-sends, the tool's dedupe answers "busy, not delivered", and
// the durable record ends "not_delivered" -- contradicting the answer the
// agent holds and inviting a redo.
func TestAnsweredSucceededIsNeverRecordedNotDelivered(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	w.store.failNth = func(n int64) bool { return n == 2 }
	c := w.Call(t, "echo", `{"a":1}`, "")
	out, err := w.Kernel.Submit(context.Background(), c)
	if err != nil || out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("first run: %+v %v", out, err)
	}
	w.Kernel.WaitSettles()
	w.store.failNth = nil
	w.Kernel.Close()
	busy := &kernel.DeliveryError{Err: errors.New("http 503: a delivery of this Idempotency-Key is in progress"), NotDelivered: true}
	k := restart(t, w, &scriptedTool{script: []error{busy}})
	rec, _ := k.Call(c.RequestID)
	if rec.Execution == kernel.ExecutionNotDelivered {
		t.Fatalf("agent was told %q; the record now says %q (%s)", out.Execution, rec.Execution, rec.ToolError)
	}
}
