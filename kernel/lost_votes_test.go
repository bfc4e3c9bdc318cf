package kernel_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// On a store of its own (bbolt), a denial whose commit is reported failed
// (an fsync error) may be on the disk all the same. When the store heals,
// a durable denial is told to channels, once, as its answer would have
// told it; before, the heal told nobody and the request stayed live in
// every channel.
func TestDenialReportedFailedIsToldAfterTheHeal(t *testing.T) {
	st := &lostCommitStore{}
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	told := &recordingNotifier{}
	w := testkit.NewWorld(t, testkit.Options{Policy: honestLogPolicyFor(t, 1, 1, "", financeLead), Clock: clk, Dispatcher: &fakeDispatcher{},
		KernelKey: testkit.Key(keys.FromSeed(make([]byte, 32))), Agent: testkit.Key(agentK), Grants: []string{"deploys"},
		CapabilityTTL: 24 * time.Hour, Notifier: told,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	k := w.Kernel
	out, err := k.Submit(context.Background(), testkit.NewCall(t, agentK, w.CapRaw, "demo", "echo", `{"amount":450}`, "", clk.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, financeLead, approval.DecisionDenied,
		func(tok *approval.Token) { tok.Note = "not today" })
	st.armed.Store(true)
	if _, err := k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); !errors.Is(err, kernel.ErrVoteUncertain) {
		t.Fatalf("a denial whose commit was reported failed: want ErrVoteUncertain, got %v", err)
	}
	st.down.Store(false) // the store heals (boltstore OnHeal -> RecoverAfterHeal)
	if err := k.RecoverAfterHeal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec, err := k.Call(out.RequestID); err != nil || rec.Status != kernel.StatusDenied {
		t.Fatalf("setup: the denial is not durable: %+v %v", rec, err)
	}
	resolved := func() int {
		return len(slices.DeleteFunc(told.told(out.ApprovalRequestID), func(e string) bool { return e != kernel.EventApprovalResolved }))
	}
	if n := resolved(); n != 1 {
		t.Fatalf("after the heal, channels were told of the durable denial %d times; want once", n)
	}
	if err := k.RecoverAfterHeal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("the durable denial presented again: want ErrReplay, got %v", err)
	}
	if n := resolved(); n != 1 {
		t.Fatalf("channels were told of the denial %d times; want once", n)
	}
}
