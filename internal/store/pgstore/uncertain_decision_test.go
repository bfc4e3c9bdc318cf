package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	w := newLostCommitWorld(t, fmt.Sprintf(replicaPolicy, keys.FromSeed([]byte("approver-a-approver-a-approver-a")).Public(),
		keys.FromSeed([]byte("approver-b-approver-b-approver-b")).Public()))
	w.deliveredOnce(t, `{"x":1}`)
	k, st, disp, clk, agent, capRaw := w.k, w.st, w.disp, w.clk, w.agent, w.capRaw

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

// lostCommitWorld is a replica on a store whose commits can be reported
// failed (lostAnswerStore), an agent and its capability for echo.
type lostCommitWorld struct {
	k      *kernel.Kernel
	st     *lostAnswerStore
	disp   *countingDispatcher
	clk    *clock.Fake
	agent  keys.PrivateKey
	capRaw []byte
}

func newLostCommitWorld(t *testing.T, policySrc string) *lostCommitWorld {
	t.Helper()
	p, err := policy.Parse([]byte(policySrc), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := &lostCommitWorld{st: &lostAnswerStore{Store: openPG(t, pgtest.Database(t))},
		disp: &countingDispatcher{calls: map[string]int{}}, clk: clock.NewFake(time.Now()),
		agent: keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))}
	w.k = startKernel(t, p, w.st, w.st.Store, w.disp, w.clk)
	if w.capRaw, _, err = w.k.IssueCapability(w.agent.Public(), []string{"echo"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	return w
}

// deliveredOnce submits a call whose allow decision's commit is durable
// but reported failed, and checks that the replica's sweep delivers it
// exactly once and it succeeds.
func (w *lostCommitWorld) deliveredOnce(t *testing.T, args string) {
	t.Helper()
	call := testkit.NewCall(t, w.agent, w.capRaw, "demo", "echo", args, "", w.clk.Now())
	w.st.lose.Store(true)
	if _, err := w.k.Submit(context.Background(), call); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("a decision commit reported failed: want ErrOutcomeUnknown, got %v", err)
	}
	eventually(t, "the durable decision's call delivered and settled", func() bool {
		rec, err := w.k.Call(call.RequestID)
		return err == nil && rec.Status == kernel.StatusAllowed && rec.Execution != ""
	})
	rec, _ := w.k.Call(call.RequestID)
	w.disp.mu.Lock()
	n := w.disp.calls[call.RequestID]
	w.disp.mu.Unlock()
	if n != 1 || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("delivered %d times, execution %q (%s); want once, succeeded: this replica never sent it", n, rec.Execution, rec.ToolError)
	}
}

// An at_most_once call whose allow decision's commit is in the database
// but was reported failed (COMMIT's answer lost) was never sent by this
// replica, which sends only after a decision commits: its sweep delivers
// it once, as its first attempt, rather than settling it "unknown" as if
// a delivery had been cut short.
func TestDurableAtMostOnceDecisionReportedFailedIsDeliveredOnce(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(replicaPolicy, keys.FromSeed([]byte("approver-a-approver-a-approver-a")).Public(),
		keys.FromSeed([]byte("approver-b-approver-b-approver-b")).Public()),
		`transport = "builtin"`, "transport = \"builtin\"\ndelivery = \"at_most_once\"", 1)
	newLostCommitWorld(t, src).deliveredOnce(t, `{"x":1}`)
}
