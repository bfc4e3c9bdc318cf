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
	"github.com/chiokernel/chio/policy"
)

// batchHookStore runs hook(n) before the n-th Update after arming.
type batchHookStore struct {
	kernel.Store
	armed atomic.Bool
	n     atomic.Int64
	hook  func(n int64)
}

func (s *batchHookStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.armed.Load() {
		s.hook(s.n.Add(1))
	}
	return s.Store.Update(ctx, fn)
}

func revBatchWorld(t *testing.T, hs *batchHookStore, fake *clock.Fake, disp kernel.Dispatcher) *testkit.World {
	t.Helper()
	p, err := policy.Parse([]byte(fmt.Sprintf(expiryPolicy, financeLead.Public(), cfo.Public(), "deny")), "expiry.toml")
	if err != nil {
		t.Fatal(err)
	}
	return testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: disp, Clock: fake, Server: "pay", Grants: []string{"refunds"},
		CapabilityTTL: 2 * time.Hour, WrapStore: func(s kernel.Store) kernel.Store {
			if hs == nil {
				return s
			}
			hs.Store = s
			return hs
		}})
}

func revSignBatch(t testing.TB, k *kernel.Kernel, now time.Time, window time.Duration, mutate func(*approval.BatchToken)) []byte {
	t.Helper()
	bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: financeLead.Public().String(),
		Audience:      k.PublicKey().String(),
		ServerPattern: "pay", ToolPattern: "issue_refund", NotBefore: now.Unix(), NotAfter: now.Add(window).Unix()}
	if mutate != nil {
		mutate(bt)
	}
	raw, err := bt.Sign(financeLead)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// tryBatch judges the standing approval's window (Covers) with the time
// the call ARRIVED (decide's now), not the time its allow decision
// commits. commitAllow re-reads the clock inside the commit for the
// capability's expiry (b6512b0) but the batch claim, which runs in that
// same transaction, still uses the stale now. A claim that commits after
// not_after (a loaded store, a full commit queue) runs the tool on an
// expired standing approval with no human, and its allow receipt is
// stamped after the batch ended.
func TestBatchWindowIsJudgedAtTheDecisionCommit(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	hs := &batchHookStore{}
	disp := &timedDispatcher{clock: fake}
	w := revBatchWorld(t, hs, fake, disp)
	ctx := context.Background()
	raw := revSignBatch(t, w.Kernel, fake.Now(), time.Minute, nil)
	b, err := w.Kernel.CreateBatch(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	fake.Advance(50 * time.Second) // the call arrives with 10 s of the batch left
	// Update 1 is the batch claim + allow decision: it lands two minutes
	// later (a loaded store).
	hs.hook = func(n int64) {
		if n == 1 {
			fake.Advance(2 * time.Minute)
		}
	}
	hs.armed.Store(true)
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if at := disp.at.Load(); at != 0 && at >= b.Token.NotAfter {
		t.Fatalf("the tool ran at %d under standing approval %s that ended at %d (status %s, receipt %s)",
			at, b.Token.ID, b.Token.NotAfter, out.Status, out.ReceiptID)
	}
}
