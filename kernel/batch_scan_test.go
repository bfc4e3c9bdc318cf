package kernel_test

import (
	"context"
	"errors"
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

// expiryWorldPolicy is the policy revBatchWorld runs: the Finance Lead
// may sign standing approvals for refunds.
func expiryWorldPolicy(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(fmt.Sprintf(expiryPolicy, financeLead.Public(), cfo.Public(), "deny")), "expiry.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// batchCountStore counts the standing approvals the kernel's write
// transactions read through the store's batch scans while armed.
type batchCountStore struct {
	kernel.Store
	armed   atomic.Bool
	visited atomic.Int64
}

func (s *batchCountStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	return s.Store.Update(ctx, func(tx kernel.Tx) error {
		if !s.armed.Load() {
			return fn(tx)
		}
		return fn(&batchCountTx{Tx: tx, visited: &s.visited})
	})
}

type batchCountTx struct {
	kernel.Tx
	visited *atomic.Int64
}

func (t *batchCountTx) Batches(after string, fn func(*approval.Batch) bool) error {
	return t.Tx.Batches(after, func(b *approval.Batch) bool { t.visited.Add(1); return fn(b) })
}

func (t *batchCountTx) LiveBatches(now int64, fn func(*approval.Batch) bool) error {
	return t.Tx.LiveBatches(now, func(b *approval.Batch) bool { t.visited.Add(1); return fn(b) })
}

// seedDeadBatches stores n standing approvals that can never cover a call
// again, as an approver's history leaves them: a third expired, a third
// revoked, a third used up (all expired when expiredOnly). Their ids sort
// before any new batch's.
func seedDeadBatches(t testing.TB, s kernel.Store, now time.Time, n int, expiredOnly bool) {
	t.Helper()
	one := int64(1)
	err := s.Update(context.Background(), func(tx kernel.Tx) error {
		for i := range n {
			tok := &approval.BatchToken{Schema: approval.BatchSchema, ID: fmt.Sprintf("ba-0-dead-%06d", i),
				Approver: financeLead.Public().String(), ServerPattern: "pay", ToolPattern: "issue_refund",
				NotBefore: now.Add(-2 * time.Hour).Unix(), NotAfter: now.Add(time.Hour).Unix()}
			b := &approval.Batch{Token: tok, Raw: []byte(`{}`), CreatedAt: now.UnixMilli()}
			kind := i % 3
			if expiredOnly {
				kind = 0
			}
			switch kind {
			case 0:
				tok.NotAfter = now.Add(-time.Hour).Unix()
			case 1:
				b.Revoked, b.RevokedAt = true, now.UnixMilli()
			case 2:
				tok.MaxCalls, b.Usage.Calls = &one, 1
			}
			if err := tx.PutBatch(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A decision under a grant standing approvals can cover looks for one to
// claim inside its commit. It must read only the batches that could still
// cover a call (unexpired, unrevoked, not used up): batches are never
// deleted (receipts name them and exports carry them), so a scan of every
// batch ever created makes each allow cost grow with the history.
func TestBatchClaimVisitsOnlyLiveBatches(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	cs := &batchCountStore{}
	w := testkit.NewWorld(t, testkit.Options{Policy: expiryWorldPolicy(t), Dispatcher: &timedDispatcher{clock: fake}, Clock: fake,
		Server: "pay", Grants: []string{"refunds"}, CapabilityTTL: 2 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	seedDeadBatches(t, cs.Store, fake.Now(), 999, false)
	if _, err := w.Kernel.CreateBatch(context.Background(), revSignBatch(t, w.Kernel, fake.Now(), time.Hour, nil)); err != nil {
		t.Fatal(err)
	}
	cs.armed.Store(true)
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	cs.armed.Store(false)
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("the live standing approval should cover the call: %+v", out)
	}
	if n := cs.visited.Load(); n > 1 {
		t.Fatalf("one decision read %d standing approvals; only 1 of the 1,000 stored could cover a call", n)
	}
}

// BenchmarkBatchClaim is one call allowed under a standing approval with
// 0, 1,000 and 10,000 expired batches stored beside it (bbolt, the
// default store). visited/op is how many batches each decision read.
func BenchmarkBatchClaim(b *testing.B) {
	for _, dead := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("expired=%d", dead), func(b *testing.B) {
			fake := clock.NewFake(time.Unix(1_900_000_000, 0))
			cs := &batchCountStore{}
			w := testkit.NewWorld(b, testkit.Options{Policy: expiryWorldPolicy(b), Dispatcher: &timedDispatcher{clock: fake}, Clock: fake,
				Server: "pay", Grants: []string{"refunds"}, CapabilityTTL: 2 * time.Hour,
				WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
			seedDeadBatches(b, cs.Store, fake.Now(), dead, true)
			if _, err := w.Kernel.CreateBatch(context.Background(), revSignBatch(b, w.Kernel, fake.Now(), time.Hour, nil)); err != nil {
				b.Fatal(err)
			}
			cs.armed.Store(true)
			b.ResetTimer()
			for range b.N {
				if out := w.Submit(b, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, ""); out.Status != kernel.StatusAllowed {
					b.Fatalf("not covered: %+v", out)
				}
			}
			b.ReportMetric(float64(cs.visited.Load())/float64(b.N), "visited/op")
		})
	}
}

// One approver key may hold at most MaxLiveBatchesPerApprover live
// standing approvals: the next is refused and nothing is stored. Batches
// that ended, were revoked or were used up do not count.
func TestLiveBatchesPerApproverAreCapped(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := revBatchWorld(t, nil, fake, &timedDispatcher{clock: fake})
	ctx := context.Background()
	var ids []string
	for range kernel.MaxLiveBatchesPerApprover {
		b, err := w.Kernel.CreateBatch(ctx, revSignBatch(t, w.Kernel, fake.Now(), time.Hour, nil))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.Token.ID)
	}
	over := revSignBatch(t, w.Kernel, fake.Now(), time.Hour, nil)
	if _, err := w.Kernel.CreateBatch(ctx, over); !errors.Is(err, kernel.ErrTooManyBatches) {
		t.Fatalf("standing approval #%d of one approver: %v, want ErrTooManyBatches", kernel.MaxLiveBatchesPerApprover+1, err)
	}
	list, _, err := w.Kernel.ListBatches("", 1000)
	if err != nil || len(list) != kernel.MaxLiveBatchesPerApprover {
		t.Fatalf("after the refusal %d batches are stored (%v), want %d", len(list), err, kernel.MaxLiveBatchesPerApprover)
	}
	// A revoked one frees a place.
	if err := w.Kernel.RevokeBatch(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Kernel.CreateBatch(ctx, over); err != nil {
		t.Fatalf("after a revocation: %v", err)
	}
	// All of them ended: a full set may be created again.
	fake.Advance(time.Hour)
	for range kernel.MaxLiveBatchesPerApprover {
		if _, err := w.Kernel.CreateBatch(ctx, revSignBatch(t, w.Kernel, fake.Now(), time.Hour, nil)); err != nil {
			t.Fatalf("after every earlier batch ended: %v", err)
		}
	}
}
