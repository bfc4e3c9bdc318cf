package pgstore_test

import (
	"context"
	"errors"
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
	"github.com/chiokernel/chio/policy"
)

// approvingVoteLostStore is a PostgreSQL store whose next commit that
// approves a request (the vote meeting its quorum) succeeds in the
// database but is reported failed (lose), as when the connection is cut
// while COMMIT's answer is on its way, or fails before it reaches the
// database (fail). Every other commit goes through.
type approvingVoteLostStore struct {
	*pgstore.Store // kernel.Replicated, as chiod's store is
	lose, fail     atomic.Bool
}

type approvingTx struct {
	kernel.Tx
	approves bool
}

func (t *approvingTx) PutApproval(r *approval.Request) error {
	if r.Status == approval.StatusApproved {
		t.approves = true
	}
	return t.Tx.PutApproval(r)
}

func (s *approvingVoteLostStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	var approves bool
	err := s.Store.Update(ctx, func(tx kernel.Tx) error {
		w := &approvingTx{Tx: tx}
		if err := fn(w); err != nil {
			return err
		}
		if approves = w.approves; approves && s.fail.CompareAndSwap(true, false) {
			return errInjected // nothing of this function is written
		}
		return nil
	})
	if errors.Is(err, errInjected) {
		return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err)
	}
	if err == nil && approves && s.lose.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: connection reset while COMMIT was answered", kernel.ErrUnavailable)
	}
	return err
}

// An approving vote whose commit is durable but whose answer is lost
// leaves the call approved and undecided (dispatching, owned by this live
// replica, which no other replica takes over). The voter is told the vote
// may or may not be recorded; the call must still be decided and run
// once, without a restart, by this replica's sweep. Before, nothing
// listed it: it stayed dispatching until the replica restarted.
func TestApprovedCallWhoseVoteAnswerWasLostIsFinished(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Database(t)
	disp := &countingDispatcher{calls: map[string]int{}}
	pgA := openPG(t, dsn)
	st := &approvingVoteLostStore{Store: pgA}
	clk := clock.NewFake(time.Now())
	k := startKernel(t, p, st, pgA, disp, clk)
	// A second live replica on the same database: it must not take the
	// call of a live replica either (no double dispatch).
	pgB := openPG(t, dsn)
	startKernel(t, p, pgB, pgB, disp, clock.NewFake(time.Now()))

	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"esc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "delete_file", `{"path":"/tmp/x"}`, "", clk.Now())
	out, err := k.Submit(context.Background(), call)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	st.lose.Store(true)
	tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, a, approval.DecisionApproved, nil)
	if _, err := k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, kernel.ErrVoteUncertain) {
		t.Fatalf("an approving vote whose commit answer was lost: want ErrVoteUncertain, got %v", err)
	}
	if st.lose.Load() {
		t.Fatal("the vote did not approve the request")
	}
	if req, err := k.Approval(out.ApprovalRequestID); err != nil || req.Status != approval.StatusApproved {
		t.Fatalf("the vote's commit is durable: want the request approved, got %+v %v", req, err)
	}
	// Presenting the vote again settles the question honestly: it is
	// recorded, so it is refused as a replay, never counted twice.
	if _, err := k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("the durable vote presented again: want ErrReplay, got %v", err)
	}
	started := time.Now()
	eventually(t, "the approved call decided and delivered without a restart", func() bool {
		rec, err := k.Call(call.RequestID)
		return err == nil && rec.Status == kernel.StatusAllowed && rec.Execution != ""
	})
	t.Logf("finished %v after the vote", time.Since(started).Round(100*time.Millisecond))
	// Later sweeps (of either replica) must not send it again.
	time.Sleep(2 * kernel.SweepInterval)
	rec, _ := k.Call(call.RequestID)
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[call.RequestID]; n != 1 || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("delivered %d times, execution %q; want once, succeeded", n, rec.Execution)
	}
}

// The same vote whose commit never reached the database changes nothing:
// the voter is told it may or may not be recorded, the sweep that looks
// at the call finds it still waiting for approval and sends nothing, and
// the same token presented again approves it, once.
func TestApprovingVoteThatNeverCommittedRunsNothing(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	pg := openPG(t, pgtest.Database(t))
	st := &approvingVoteLostStore{Store: pg}
	disp := &countingDispatcher{calls: map[string]int{}}
	clk := clock.NewFake(time.Now())
	k := startKernel(t, p, st, pg, disp, clk)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"esc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "delete_file", `{"path":"/tmp/x"}`, "", clk.Now())
	out, err := k.Submit(context.Background(), call)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	st.fail.Store(true)
	tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, a, approval.DecisionApproved, nil)
	if _, err := k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, kernel.ErrVoteUncertain) {
		t.Fatalf("an approving vote whose commit failed: want ErrVoteUncertain, got %v", err)
	}
	if st.fail.Load() {
		t.Fatal("the vote did not reach its approving commit")
	}
	time.Sleep(2*kernel.SweepInterval + 500*time.Millisecond) // two sweeps look
	if rec, err := k.Call(call.RequestID); err != nil || rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("a vote that never committed: want the call still pending approval, got %+v %v", rec, err)
	}
	disp.mu.Lock()
	n := disp.calls[call.RequestID]
	disp.mu.Unlock()
	if n != 0 {
		t.Fatalf("a call whose approving vote never committed was delivered %d times", n)
	}
	res, err := k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the same token presented again: %+v %v", res, err)
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[call.RequestID]; n != 1 {
		t.Fatalf("delivered %d times; want once", n)
	}
}
