package kernel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// observedVerdicts is a kernel.Observer that keeps the verdicts it is told.
type observedVerdicts struct {
	mu  sync.Mutex
	got []string
}

func (o *observedVerdicts) Decision(verdict string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, verdict)
}

func (o *observedVerdicts) verdicts() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

// Replicas share a store. A call another replica decided between this
// kernel's read and its commit is answered from that replica's record
// (the same call, its outcome): this kernel decided nothing, so it counts
// no decision. Otherwise chio_decisions_total, summed over replicas,
// counted the call twice, under whatever status the record had then
// (dispatching, cancelled…: verdicts no decision here ever gives).
func TestObserverCountsOnlyDecisionsMadeHere(t *testing.T) {
	w := newWAWorld(t, &scriptedTool{})
	obs := &observedVerdicts{}
	replica, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.store,
		Dispatcher: w.tool, Clock: w.Clock, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	call := w.Call(t, "echo", `{"a":1}`, "")
	// The replica reads no record and judges the call; its allow commit is
	// held before it reaches the store.
	reached, release := holdAt(w, w.store.n.Load()+1)
	type answer struct {
		out *kernel.Outcome
		err error
	}
	done := make(chan answer, 1)
	go func() {
		out, err := replica.Submit(context.Background(), call)
		done <- answer{out, err}
	}()
	select {
	case <-reached:
	case <-time.After(5 * time.Second):
		t.Fatal("the replica's allow commit never reached the store")
	}
	// Meanwhile the other kernel decides the same call, and runs it.
	if out := w.SubmitCall(t, call); out.Status != kernel.StatusAllowed {
		t.Fatalf("first kernel: %+v", out)
	}
	release()
	a := <-done
	// The first kernel answered as soon as the tool succeeded; its record
	// says dispatching until that settles in the background.
	if a.err != nil || a.out.Status != kernel.StatusAllowed && a.out.Status != kernel.StatusDispatching {
		t.Fatalf("replica: %+v %v", a.out, a.err)
	}
	if got := obs.verdicts(); len(got) != 0 {
		t.Fatalf("the replica counted decisions %v for a call the other kernel decided", got)
	}
	// A call the replica decides itself counts once.
	if out, err := replica.Submit(context.Background(), w.Call(t, "echo", `{"a":2}`, "")); err != nil || out.Status != kernel.StatusAllowed {
		t.Fatalf("replica's own call: %+v %v", out, err)
	}
	if got := obs.verdicts(); len(got) != 1 || got[0] != kernel.StatusAllowed {
		t.Fatalf("replica's own decision counted as %v", got)
	}
}

// A call whose allow decision is durable (its receipt signed and stored,
// the tool run) but whose outcome's commit then fails is answered
// outcome_unknown: it was decided here all the same, and recovery, which
// records its outcome later, decides nothing. It was never counted:
// chio_decisions_total{verdict="allowed"} fell short of the allow
// receipts, by exactly the calls a failing store touched.
func TestObserverCountsAnAllowWhoseOutcomeIsNotRecorded(t *testing.T) {
	w := newWAWorld(t, &scriptedTool{})
	obs := &observedVerdicts{}
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.store,
		Dispatcher: w.tool, Clock: w.Clock, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	call := w.Call(t, "issue_refund", `{"amount":5}`, "")
	allow := w.store.n.Load() + 1
	w.store.failNth = func(n int64) bool { return n > allow } // the allow lands; its settle does not
	_, err = k.Submit(context.Background(), call)
	if !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("setup: want the outcome unknown, got %v", err)
	}
	if rec, err := k.Call(call.RequestID); err != nil || rec.Status != kernel.StatusDispatching || len(w.tool.deliveries(call.RequestID)) != 1 {
		t.Fatalf("setup: the allow is not durable or the tool did not run: %+v %v", rec, err)
	}
	if got := obs.verdicts(); len(got) != 1 || got[0] != kernel.StatusAllowed {
		t.Fatalf("a durable allow whose outcome is not recorded was counted as %v, want [allowed]", got)
	}
}
