package kernel_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// lostEndingWorld parks one call under a one-approval policy on a store
// whose next armed commit lands but is reported failed, with a long-poll
// subscriber (as `chio await` has) and a recording notifier (channels).
func lostEndingWorld(t *testing.T) (*testkit.World, *lostCommitStore, *clock.Fake, *recordingNotifier, *kernel.Outcome, <-chan kernel.Event) {
	t.Helper()
	st := &lostCommitStore{}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	told := &recordingNotifier{}
	w := testkit.NewWorld(t, testkit.Options{Policy: honestLogPolicyFor(t, 1, 1, "", financeLead), Clock: clk, Dispatcher: &fakeDispatcher{},
		KernelKey: testkit.Key(keys.FromSeed(make([]byte, 32))), Agent: testkit.Key(agentK), Grants: []string{"deploys"},
		CapabilityTTL: 24 * time.Hour, Notifier: told,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	out, err := w.Kernel.Submit(context.Background(), testkit.NewCall(t, agentK, w.CapRaw, "demo", "echo", `{"amount":450}`, "", clk.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	events, cancel, ok := w.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	t.Cleanup(cancel)
	return w, st, clk, told, out, events
}

// resolvedTold counts the approval.resolved notices channels got for id.
func resolvedTold(told *recordingNotifier, id string) int {
	return len(slices.DeleteFunc(told.told(id), func(e string) bool { return e != kernel.EventApprovalResolved }))
}

// waitCompleted waits (up to 5 s) for the call.completed event of
// requestID on a long-poll subscription, as `chio await` does, and
// returns the status it carries ("" if none came).
func waitCompleted(events <-chan kernel.Event, requestID string) string {
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Type == kernel.EventCallCompleted && e.Call != nil && e.Call.RequestID == requestID {
				return e.Call.Status
			}
		case <-deadline:
			return ""
		}
	}
}

// A cancel whose commit landed but was reported failed is answered
// ErrOutcomeUnknown. Once the store heals, what its answer would have told
// is told, once: channels learn the request is resolved (else they keep
// showing a live request with its buttons) and a long-poll on the call
// returns (else `chio await` waits out its whole wait).
func TestCancelReportedFailedIsToldAfterTheHeal(t *testing.T) {
	w, st, _, told, out, events := lostEndingWorld(t)
	k := w.Kernel
	st.armed.Store(true)
	if _, err := k.Cancel(context.Background(), out.ApprovalRequestID, "wrong account", kernel.CancelledByAdmin); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("a cancel whose commit was reported failed: want ErrOutcomeUnknown, got %v", err)
	}
	st.down.Store(false) // the store heals (boltstore OnHeal -> RecoverAfterHeal)
	if err := k.RecoverAfterHeal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec, err := k.Call(out.RequestID); err != nil || rec.Status != kernel.StatusCancelled {
		t.Fatalf("setup: the cancel is not durable: %+v %v", rec, err)
	}
	if n := resolvedTold(told, out.ApprovalRequestID); n != 1 {
		t.Fatalf("after the heal, channels were told %d times that the durably cancelled request is resolved; want once", n)
	}
	if got := waitCompleted(events, out.RequestID); got != kernel.StatusCancelled {
		t.Fatalf("a long-poll on the durably cancelled call got %q; want call.completed with %q", got, kernel.StatusCancelled)
	}
	if n := k.ArmedTimers(); n != 0 {
		t.Fatalf("%d deadline(s) still armed for a cancelled request", n)
	}
	// Later looks (another heal, the cancel sent again) tell nothing more.
	if err := k.RecoverAfterHeal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Cancel(context.Background(), out.ApprovalRequestID, "again", kernel.CancelledByAdmin); err == nil {
		t.Fatal("a second cancel of a cancelled request was accepted")
	}
	if n := resolvedTold(told, out.ApprovalRequestID); n != 1 {
		t.Fatalf("channels were told %d times; want once", n)
	}
}

// A deadline's denial whose commit landed but was reported failed is
// retried by its timer a second later, which finds the request no longer
// pending. Its news must still be told, once.
func TestDeadlineDenialReportedFailedIsTold(t *testing.T) {
	w, st, clk, told, out, events := lostEndingWorld(t)
	k := w.Kernel
	req, err := k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	st.armed.Store(true)
	clk.Set(time.Unix(req.ExpiresAt, 0)) // the deadline fires; its commit lands, reported failed
	for i := 0; !st.down.Load(); i++ {
		if i > 500 {
			t.Fatal("setup: the deadline's commit never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	st.down.Store(false) // the store heals without a heal hook (a PostgreSQL COMMIT whose answer was lost)
	// The timer's retry, once armed: the deadline's timer was spent when it
	// fired, and moving the clock before onDeadline re-arms it (a second
	// after the clock then) left the retry unfired (a flake: 3 in 400 -race
	// runs under load).
	for i := 0; k.ArmedTimers() == 0; i++ {
		if i > 2000 {
			t.Fatal("setup: the deadline's retry was never armed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	clk.Advance(2 * time.Second)
	if got := waitCompleted(events, out.RequestID); got != kernel.StatusDenied {
		t.Fatalf("a long-poll on the call denied at its deadline got %q; want call.completed with %q", got, kernel.StatusDenied)
	}
	if rec, err := k.Call(out.RequestID); err != nil || rec.Status != kernel.StatusDenied {
		t.Fatalf("setup: the denial is not durable: %+v %v", rec, err)
	}
	if n := resolvedTold(told, out.ApprovalRequestID); n != 1 {
		t.Fatalf("channels were told %d times that the request denied at its deadline is resolved; want once", n)
	}
}
