package kernel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// liveVote marks the context of the vote a test presents, so a store
// wrapper can tell the live vote's commits from recovery's.
type liveVote struct{}

// afterVoteStore runs afterVote once, right after the live vote's commit
// has approved call requestID (dispatching, no decision yet), before the
// vote's resume goes on.
type afterVoteStore struct {
	kernel.Store
	requestID string
	afterVote atomic.Pointer[func()]
}

func (s *afterVoteStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	err := s.Store.Update(ctx, fn)
	if err != nil || ctx.Value(liveVote{}) == nil {
		return err
	}
	var approvedUndecided bool
	_ = s.Store.View(func(tx kernel.ReadTx) error {
		c, err := tx.Call(s.requestID)
		approvedUndecided = err == nil && c.Status == kernel.StatusDispatching && c.DecisionReceiptID == ""
		return nil
	})
	if hook := s.afterVote.Load(); approvedUndecided && hook != nil && s.afterVote.CompareAndSwap(hook, nil) {
		(*hook)()
	}
	return err
}

// A vote that lands just after a bbolt store healed: the heal's recovery
// (boltstore OnHeal -> RecoverAfterHeal) reads the calls left dispatching
// right after the vote's commit approved this one, and resumes it, while
// the vote's own resume is about to. The decision commits once and the
// tool runs once (commitAllow's guards), but whichever resume lost told
// its side a conflict: when recovery won, the approver who decided the
// call was answered "your vote is recorded ... the approved call is not
// finished yet ... conflict" for a call already sent and settled.
// Recovery now leaves an approved call that a live vote on this kernel is
// resuming to that vote (live_votes.go), and takes it only if that resume
// left it unfinished.
func TestVoteJustAfterAHealIsResumedOnce(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	disp := &fakeDispatcher{}
	st := &afterVoteStore{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(quorumReloadPolicy, financeLead.Public(), cfo.Public(), 1),
		Clock: clk, Dispatcher: disp, Grants: []string{"deploys"},
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	k, ctx := w.Kernel, context.Background()
	c := w.Call(t, "echo", `{"deploy":"prod"}`, "")
	out, err := k.Submit(ctx, c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	st.requestID = c.RequestID
	// Recovery waiting for the live vote's resume (the fix) is as far as
	// the heal's pass can get before the vote goes on; before the fix it
	// finished the call first.
	awaiting := make(chan struct{})
	k.RecoveryAwaitsVote(func() { close(awaiting) })
	healed := make(chan struct{})
	hook := func() {
		// The store heals now: its recovery pass runs.
		if err := k.RecoverAfterHeal(context.Background()); err != nil {
			t.Error(err)
		}
		recovered := make(chan struct{})
		go func() { _ = k.WaitRecovery(context.Background()); close(recovered) }()
		select {
		case <-recovered:
		case <-awaiting:
		}
		close(healed)
	}
	st.afterVote.Store(&hook)
	tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	res, err := k.Respond(context.WithValue(ctx, liveVote{}, true), out.ApprovalRequestID, tok, "", "")
	select {
	case <-healed:
	default:
		t.Fatal("setup: the heal's recovery did not run after the vote's commit")
	}
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	k.WaitSettles()
	rec, _ := k.Call(c.RequestID)
	if err != nil || res.Outcome != approval.StatusApproved || res.Call == nil || res.Call.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("the approver who decided the call was answered %+v, %v; the call is %s (%s), sent %d time(s)",
			res, err, rec.Status, rec.Execution, disp.count(c.RequestID))
	}
	if rec.Status != kernel.StatusAllowed || disp.count(c.RequestID) != 1 || res.Call.ReceiptID != rec.ReceiptID {
		t.Fatalf("call %+v sent %d time(s); the approver was told %+v", rec, disp.count(c.RequestID), res.Call)
	}
	if n := k.Recovery().Failed; n != 0 {
		t.Fatalf("recovery failed %d time(s): it raced the vote's resume", n)
	}
}
