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
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// lostThenUnreadStore is a lostAnswerStore whose commit reported failed
// (its answer lost) also makes the next read of that call's record fail:
// the database that just cut a connection is still blinking when the
// sweep first looks.
type lostThenUnreadStore struct {
	*lostAnswerStore
	id       atomic.Value // string: the call whose next read fails
	failRead atomic.Bool
}

func (s *lostThenUnreadStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	losing := s.lose.Load()
	err := s.lostAnswerStore.Update(ctx, fn)
	if losing && !s.lose.Load() && err != nil {
		s.failRead.Store(true) // that commit is durable and reported failed
	}
	return err
}

type unreadTx struct {
	kernel.ReadTx
	s *lostThenUnreadStore
}

func (t unreadTx) Call(id string) (*kernel.CallRecord, error) {
	if want, _ := t.s.id.Load().(string); id == want && t.s.failRead.CompareAndSwap(true, false) {
		return nil, fmt.Errorf("%w: injected: connection reset", kernel.ErrUnavailable)
	}
	return t.ReadTx.Call(id)
}

func (s *lostThenUnreadStore) View(fn func(kernel.ReadTx) error) error {
	return s.Store.View(func(tx kernel.ReadTx) error { return fn(unreadTx{tx, s}) })
}

// An at_most_once call whose allow decision's commit is durable but was
// reported failed is sent once by the replica's sweep, as its first
// attempt (d727cea, 5da407a: TestDurableAtMostOnceDecisionReportedFailed
// IsDeliveredOnce). When the sweep's read of that call failed once, the
// sweep left the call out of those it recovers and so forgot that this
// replica never sent it (forgetUnsent drops what it did not read); the
// next sweep then settled it "unknown: chiod stopped while the call was in
// flight" and never ran the approved call. It is still sent once.
func TestAtMostOnceUnsentDecisionSurvivesAFailedSweepRead(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(replicaPolicy, keys.FromSeed([]byte("approver-a-approver-a-approver-a")).Public(),
		keys.FromSeed([]byte("approver-b-approver-b-approver-b")).Public()),
		`transport = "builtin"`, "transport = \"builtin\"\ndelivery = \"at_most_once\"", 1)
	p, err := policy.Parse([]byte(src), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := &lostThenUnreadStore{lostAnswerStore: &lostAnswerStore{Store: openPG(t, pgtest.Database(t))}}
	disp := &countingDispatcher{calls: map[string]int{}}
	clk := clock.NewFake(time.Now())
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	k := startKernel(t, p, st, st.Store, disp, clk)
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", clk.Now())
	st.id.Store(call.RequestID)
	st.lose.Store(true)
	if _, err := k.Submit(context.Background(), call); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("a decision commit reported failed: want ErrOutcomeUnknown, got %v", err)
	}
	eventually(t, "a sweep to read the call and fail", func() bool { return !st.failRead.Load() })
	eventually(t, "the durable decision's call settled", func() bool {
		rec, err := k.Call(call.RequestID)
		return err == nil && rec.Status != kernel.StatusDispatching && rec.Execution != ""
	})
	rec, _ := k.Call(call.RequestID)
	disp.mu.Lock()
	n := disp.calls[call.RequestID]
	disp.mu.Unlock()
	if n != 1 || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("delivered %d times, status %s, execution %q (%s); want once, succeeded: this replica never sent it",
			n, rec.Status, rec.Execution, rec.ToolError)
	}
}
