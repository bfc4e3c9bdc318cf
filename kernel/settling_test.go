package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/kernel"
)

// A successful at_least_once call is answered before its settle commit
// (settling.go). While that commit runs: an idempotent retry and every
// read see what the agent was told, recovery (after a store heal) does not
// send the call again, and Close waits for the commit.
func TestAnsweredBeforeTheSettleCommit(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	w.holdUpdate(2) // the settle commit
	c := w.Call(t, "echo", `{"a":1}`, "")
	out, err := w.Kernel.Submit(context.Background(), c)
	if err != nil || out.Status != kernel.StatusAllowed || out.Execution != kernel.ExecutionSucceeded || string(out.Output) != `{"done":true}` {
		t.Fatalf("answer: %+v %v", out, err)
	}
	var stored *kernel.CallRecord
	_ = w.Store.View(func(tx kernel.ReadTx) error { stored, err = tx.Call(c.RequestID); return err })
	if stored.Status != kernel.StatusDispatching {
		t.Fatalf("the settle commit was not held: %+v", stored)
	}
	// The agent retries with the same request id: the same answer.
	again, err := w.Kernel.Submit(context.Background(), c)
	if err != nil || again.Execution != kernel.ExecutionSucceeded || string(again.Output) != `{"done":true}` {
		t.Fatalf("retry: %+v %v", again, err)
	}
	if rec, err := w.Kernel.Call(c.RequestID); err != nil || rec.Status != kernel.StatusAllowed {
		t.Fatalf("read: %+v %v", rec, err)
	}
	// A store heal runs recovery now: the call is not sent again.
	recoverNow(t, w.Kernel)
	if n := len(tool.deliveries(c.RequestID)); n != 1 {
		t.Fatalf("%d deliveries while the settle commit ran", n)
	}
	closed := make(chan struct{})
	go func() { w.Kernel.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned before the settle commit")
	case <-time.After(50 * time.Millisecond):
	}
	close(w.store.release)
	<-closed
	_ = w.Store.View(func(tx kernel.ReadTx) error { stored, err = tx.Call(c.RequestID); return err })
	if stored.Status != kernel.StatusAllowed || string(stored.Output) != `{"done":true}` || len(tool.deliveries(c.RequestID)) != 1 {
		t.Fatalf("after the commit: %+v (%d deliveries)", stored, len(tool.deliveries(c.RequestID)))
	}
}

// A read that meets the settle commit half way still shows what the agent
// was told: here the store is read while the commit is held (the record
// says dispatching), and the commit then ends and the kernel forgets the
// answer before the read finishes. (Found as a CI flake: reading the store
// first and the kept answer second showed "dispatching" in that window.)
func TestReadOverlappingTheSettleCommitShowsTheAnswer(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	w.holdUpdate(2) // the settle commit
	c := w.Call(t, "echo", `{"a":1}`, "")
	if out, err := w.Kernel.Submit(context.Background(), c); err != nil || out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("answer: %+v %v", out, err)
	}
	after := func() {
		w.store.afterView.Store(nil)
		close(w.store.release) // the settle commit ends
		w.Kernel.WaitSettles() // and the kept answer is dropped
	}
	w.store.afterView.Store(&after)
	rec, err := w.Kernel.Call(c.RequestID)
	if err != nil || rec.Status != kernel.StatusAllowed || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("a read overlapping the settle commit: %+v %v", rec, err)
	}
	// The same window for an idempotent retry (its own store read).
	c2 := w.Call(t, "echo", `{"a":2}`, "")
	w.holdUpdate(4) // c2's settle commit
	if out, err := w.Kernel.Submit(context.Background(), c2); err != nil || out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("answer: %+v %v", out, err)
	}
	w.store.afterView.Store(&after)
	again, err := w.Kernel.Submit(context.Background(), c2)
	if err != nil || again.Status != kernel.StatusAllowed || again.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("a retry overlapping the settle commit: %+v %v", again, err)
	}
}

// Only a successful at_least_once call that no approval waits on is
// answered early: a failure's incomplete receipt, an at_most_once outcome
// and an approved call's resolution are durable before the answer.
func TestOtherOutcomesWaitForTheirSettleCommit(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args string
		script           []error
	}{
		{"at_most_once", "issue_refund", `{"customer_id":"c","amount":5,"currency":"USD"}`, nil},
		{"tool error", "echo", `{"a":1}`, []error{&kernel.DeliveryError{NotDelivered: true, Err: errors.New("refused")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWAWorld(t, &scriptedTool{script: tc.script})
			w.store.failNth = func(n int64) bool { return n == 2 }
			c := w.Call(t, tc.tool, tc.args, "")
			if out, err := w.Kernel.Submit(context.Background(), c); !errors.Is(err, kernel.ErrUnavailable) {
				t.Fatalf("answered without a durable outcome: %+v %v", out, err)
			}
		})
	}
}

// Close does not wait for ever on a settle commit that hangs (a store that
// stopped answering): after SettleDrainTimeout it returns, and the call is
// recovery's at the next start.
func TestCloseBoundsItsWaitForSettleCommits(t *testing.T) {
	fake := clock.NewFake(time.Now())
	w := newWAWorldClock(t, &scriptedTool{}, fake)
	w.holdUpdate(2) // the settle commit
	defer close(w.store.release)
	if out, err := w.Kernel.Submit(context.Background(), w.Call(t, "echo", `{"a":1}`, "")); err != nil || out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("%+v %v", out, err)
	}
	closed := make(chan struct{})
	go func() { w.Kernel.Close(); close(closed) }()
	for fake.Pending() == 0 { // Close armed its timer
		time.Sleep(time.Millisecond)
	}
	select {
	case <-closed:
		t.Fatal("Close returned before the settle commit or the timeout")
	case <-time.After(20 * time.Millisecond):
	}
	fake.Advance(kernel.SettleDrainTimeout)
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close still waiting after SettleDrainTimeout")
	}
}
