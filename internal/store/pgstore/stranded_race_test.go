package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// scanRaceStore is a PostgreSQL store with hooks that stop a live resume
// between its vote's commit and its decision's, and let one sweep look
// through the replica's own calls in between:
//
//   - the next ClaimOrphans, once failClaim is set, fails (a claim whose
//     answer may have been lost), and closes claimFailed;
//   - the first read of capability pauseCap's revocation (the live
//     resume's first step after its vote committed) closes paused and
//     waits for resume;
//   - OwnDispatching closes scanned when it lists call watch undecided;
//   - the first ClaimDeadlines after that (the next sweep's first step, so
//     the sweep that scanned has returned) closes nextSweep and waits for
//     release.
type scanRaceStore struct {
	*pgstore.Store
	failClaim   atomic.Bool
	claimFailed chan struct{}
	pauseCap    atomic.Pointer[string]
	paused      chan struct{}
	resume      chan struct{}
	watch       string
	scanned     chan struct{}
	scannedOnce atomic.Bool
	heldSweep   atomic.Bool
	nextSweep   chan struct{}
	release     chan struct{}
}

func (s *scanRaceStore) ClaimOrphans(ctx context.Context, limit int) ([]*kernel.CallRecord, error) {
	if s.failClaim.CompareAndSwap(true, false) {
		close(s.claimFailed)
		return nil, fmt.Errorf("%w: injected: connection reset during the claim", kernel.ErrUnavailable)
	}
	return s.Store.ClaimOrphans(ctx, limit)
}

func (s *scanRaceStore) OwnDispatching(ctx context.Context, after string, limit int) ([]*kernel.CallRecord, error) {
	page, err := s.Store.OwnDispatching(ctx, after, limit)
	for _, c := range page {
		if c.RequestID == s.watch && c.DecisionReceiptID == "" && s.scannedOnce.CompareAndSwap(false, true) {
			close(s.scanned)
		}
	}
	return page, err
}

func (s *scanRaceStore) ClaimDeadlines(ctx context.Context, now time.Time, id string, limit int) ([]string, error) {
	if s.scannedOnce.Load() && s.heldSweep.CompareAndSwap(false, true) {
		close(s.nextSweep)
		<-s.release
	}
	return s.Store.ClaimDeadlines(ctx, now, id, limit)
}

type scanRaceTx struct {
	kernel.ReadTx
	s *scanRaceStore
}

func (t scanRaceTx) Revoked(capID string) (bool, error) {
	if p := t.s.pauseCap.Load(); p != nil && *p == capID && t.s.pauseCap.CompareAndSwap(p, nil) {
		close(t.s.paused)
		<-t.s.resume
	}
	return t.ReadTx.Revoked(capID)
}

func (s *scanRaceStore) View(fn func(kernel.ReadTx) error) error {
	return s.Store.View(func(tx kernel.ReadTx) error { return fn(scanRaceTx{tx, s}) })
}

// A sweep looking through this replica's own calls after a failed claim
// sees an approved call whose live resume has not decided it yet (the
// vote committed, the decision not). It must leave the call to that
// resume: the approver's answer then reports the call's real outcome and
// the tool runs once, never a recovery and the live resume both deciding.
func TestLiveResumeRacingTheOwnCallsScanIsNotDoubled(t *testing.T) {
	p := orphanPolicy(t)
	st := &scanRaceStore{Store: openPG(t, pgtest.Database(t)),
		claimFailed: make(chan struct{}), paused: make(chan struct{}), resume: make(chan struct{}),
		scanned: make(chan struct{}), nextSweep: make(chan struct{}), release: make(chan struct{})}
	disp := &countingDispatcher{calls: map[string]int{}}
	clk := clock.NewFake(time.Now()) // never advanced: the lost-claim window stays open
	k := startKernel(t, p, st, st.Store, disp, clk)
	var released atomic.Bool
	unblock := func() {
		if released.CompareAndSwap(false, true) {
			close(st.release)
		}
	}
	t.Cleanup(unblock) // before k.Close: a held sweep must return

	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, capab, err := k.IssueCapability(agent.Public(), []string{"esc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "delete_file", `{"path":"/tmp/x"}`, "", clk.Now())
	st.watch = call.RequestID
	out, err := k.Submit(context.Background(), call)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	st.failClaim.Store(true)
	<-st.claimFailed // a sweep's claim failed: the following sweeps scan this replica's own calls

	st.pauseCap.Store(&capab.ID)
	a := keys.FromSeed([]byte("approver-a-approver-a-approver-a"))
	tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, a, approval.DecisionApproved, nil)
	type answer struct {
		res *kernel.RespondResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test")
		answered <- answer{res, err}
	}()
	<-st.paused    // the vote committed; the live resume has not decided the call
	<-st.scanned   // a sweep listed the call, approved and undecided
	<-st.nextSweep // that sweep has returned (the next one is held)
	if err := k.WaitRecovery(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(st.resume) // the live resume goes on
	got := <-answered
	unblock()

	if got.err != nil {
		t.Fatalf("the approver's answer: %v; want the approved call's outcome", got.err)
	}
	if got.res.Outcome != approval.StatusApproved || got.res.Call == nil || got.res.Call.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("answer %+v (call %+v); want approved, the call succeeded", got.res, got.res.Call)
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[call.RequestID]; n != 1 {
		t.Fatalf("the tool ran %d times; want once", n)
	}
	if n := k.Recovery().Failed; n != 0 {
		t.Fatalf("%d recovery attempts failed; want none (recovery never touched the call)", n)
	}
}
