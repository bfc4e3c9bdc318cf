package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// lostAnswerStore is a PostgreSQL store whose next commit succeeds in the
// database but is reported failed, as when the connection is cut while
// COMMIT's answer is on its way (a failover, a proxy reset).
type lostAnswerStore struct {
	*pgstore.Store
	lose atomic.Bool
	fail atomic.Bool // the next commit fails before it reaches the database
}

func (s *lostAnswerStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.fail.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: connection refused", kernel.ErrUnavailable)
	}
	err := s.Store.Update(ctx, fn)
	if err == nil && s.lose.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: connection reset while COMMIT was answered", kernel.ErrUnavailable)
	}
	return err
}

// An allow decision whose commit is reported failed but is durable is
// delivered by the replica's own sweep: before, with no heal hook on
// PostgreSQL, the call stayed "dispatching" (its agent told "outcome
// unknown", its re-submits waiting) until that replica restarted.
func TestDurableDecisionReportedFailedIsDelivered(t *testing.T) {
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, keys.FromSeed([]byte("approver-a-approver-a-approver-a")).Public(),
		keys.FromSeed([]byte("approver-b-approver-b-approver-b")).Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := &lostAnswerStore{Store: openPG(t, pgtest.Database(t))}
	disp := &countingDispatcher{calls: map[string]int{}}
	clk := clock.NewFake(time.Now())
	k := startKernel(t, p, st, st.Store, disp, clk)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", clk.Now())
	st.lose.Store(true)
	if _, err := k.Submit(context.Background(), call); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("a decision commit reported failed: want ErrOutcomeUnknown, got %v", err)
	}
	eventually(t, "the durable decision's call delivered and settled", func() bool {
		rec, err := k.Call(call.RequestID)
		return err == nil && rec.Status == kernel.StatusAllowed && rec.Execution != ""
	})
	rec, _ := k.Call(call.RequestID)
	disp.mu.Lock()
	n := disp.calls[call.RequestID]
	disp.mu.Unlock()
	if n != 1 || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("delivered %d times, execution %q; want once, succeeded", n, rec.Execution)
	}

	// A decision that never reached the database is never sent: the sweep
	// finds no record and forgets it.
	lost := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":2}`, "", clk.Now())
	st.fail.Store(true)
	if _, err := k.Submit(context.Background(), lost); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("want ErrOutcomeUnknown, got %v", err)
	}
	time.Sleep(2*kernel.SweepInterval + 500*time.Millisecond) // two sweeps look
	if _, err := k.Call(lost.RequestID); !errors.Is(err, kernel.ErrNotFound) {
		t.Fatalf("a decision that never committed: record %v", err)
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[lost.RequestID]; n != 0 {
		t.Fatalf("a call whose decision never committed was delivered %d times", n)
	}
}
