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

// decisionFailStore is a PostgreSQL store whose next allow decision (a
// call record written dispatching with its decision receipt) fails before
// it reaches the database; every other commit goes through.
type decisionFailStore struct {
	*pgstore.Store
	fail atomic.Bool
}

var errInjected = errors.New("injected: connection refused")

type decisionTx struct {
	kernel.Tx
	decided bool
}

func (t *decisionTx) PutCall(c *kernel.CallRecord) error {
	if c.Status == kernel.StatusDispatching && c.DecisionReceiptID != "" {
		t.decided = true
	}
	return t.Tx.PutCall(c)
}

func (s *decisionFailStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	err := s.Store.Update(ctx, func(tx kernel.Tx) error {
		w := &decisionTx{Tx: tx}
		if err := fn(w); err != nil {
			return err
		}
		if w.decided && s.fail.CompareAndSwap(true, false) {
			return errInjected // nothing of this function is written
		}
		return nil
	})
	if errors.Is(err, errInjected) {
		return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err)
	}
	return err
}

// An approved call whose allow decision's commit fails (maybe durable) is
// decided and delivered by the replica's own sweep: the vote is durable,
// the call waits (dispatching, no decision yet) on this live replica,
// which no other replica takes over.
func TestApprovedCallWhoseDecisionCommitFailedIsDeliveredBySweep(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := &decisionFailStore{Store: openPG(t, pgtest.Database(t))}
	disp := &countingDispatcher{calls: map[string]int{}}
	clk := clock.NewFake(time.Now())
	k := startKernel(t, p, st, st.Store, disp, clk)
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
	_, _ = k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test") // the decision's commit fails
	if st.fail.Load() {
		t.Fatal("the approval did not reach the allow decision")
	}
	eventually(t, "the approved call decided and delivered by the sweep", func() bool {
		rec, err := k.Call(call.RequestID)
		return err == nil && rec.Status == kernel.StatusAllowed && rec.Execution != ""
	})
	rec, _ := k.Call(call.RequestID)
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[call.RequestID]; n != 1 || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("delivered %d times, execution %q; want once, succeeded", n, rec.Execution)
	}
}
