package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// Standing approvals at every crash point. A crash (kill -9) can land at
// each store update a call under a standing approval makes: the claim
// (the batch's counters and the allow decision in one commit), the
// settle, a park when the batch no longer covers, the "told" mark. Each
// is cut either before its commit is durable or after it (durable, but
// the caller is answered an error). Then chiod restarts, recovers, and
// every agent retries its request id. Whatever the crash point:
//   - the batch's counters never exceed what was signed (calls, money);
//   - they equal what the durable log says was allowed under it (no slot
//     spent without an allow receipt, no allow receipt without its slot);
//   - an at_most_once tool ran at most once per call, and only with a
//     durable decision (countingTool checks that at each delivery);
//   - every call on record has its receipt in the log, and the answer the
//     agent got (first run and retry) agrees with the record and receipts.

// batchCall is one call of a scenario and what became of it.
type batchCall struct {
	amount int64
	call   *kernel.ToolCall
	out    *kernel.Outcome // the first run's answer
	err    error
}

func refundArgs(amount int64) string {
	return fmt.Sprintf(`{"amount":%d,"currency":"USD","customer_id":"c"}`, amount)
}

// createRefundBatch stores the Finance Lead's standing approval for
// refunds: maxCalls calls, maxTotal US cents in all, for an hour.
func createRefundBatch(t *testing.T, r *crashRig, maxCalls, maxTotal int64) *approval.Batch {
	t.Helper()
	raw := revSignBatch(t, r.w.Kernel, r.clock.Now(), time.Hour, func(bt *approval.BatchToken) {
		bt.MaxCalls = &maxCalls
		bt.MaxTotalAmount = &approval.Amount{Units: maxTotal, Currency: "USD"}
	})
	b, err := r.w.Kernel.CreateBatch(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// batchLedger is what the durable log says of one standing approval.
type batchLedger struct {
	uses, amount int64
	byRequest    map[string][]*receipt.Receipt // every receipt, per request id, in log order
	ids          map[string]*receipt.Receipt
}

// readBatchLedger reads every receipt in the store and sums the allow
// decisions that cite standing approval batchID (amounts from the calls
// as the test made them).
func readBatchLedger(t *testing.T, r *crashRig, batchID string, amounts map[string]int64) *batchLedger {
	t.Helper()
	l := &batchLedger{byRequest: map[string][]*receipt.Receipt{}, ids: map[string]*receipt.Receipt{}}
	err := r.w.Store.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(1, tx.LastSeq(), func(_ uint64, raw []byte) bool {
			rc, err := receipt.Decode(raw)
			if err != nil {
				t.Errorf("receipt: %v", err)
				return false
			}
			l.byRequest[rc.RequestID] = append(l.byRequest[rc.RequestID], rc)
			l.ids[rc.ID] = rc
			if rc.Decision.Verdict == receipt.Allow && rc.Metadata["batch_approval_id"] == batchID {
				l.uses++
				l.amount += amounts[rc.RequestID]
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// verdictOf is the verdict of the receipt a call record (or an answer)
// names for its status.
func verdictFor(rec *kernel.CallRecord) []string {
	switch rec.Status {
	case kernel.StatusPendingApproval:
		return []string{receipt.Incomplete}
	case kernel.StatusDispatching:
		return []string{receipt.Allow}
	case kernel.StatusAllowed:
		if rec.Execution == kernel.ExecutionSucceeded {
			return []string{receipt.Allow}
		}
		return []string{receipt.Incomplete}
	case kernel.StatusDenied:
		return []string{receipt.Deny}
	case kernel.StatusCancelled:
		return []string{receipt.Cancelled}
	}
	return nil
}

// checkBatchInvariants checks the invariants above once every call has
// been retried on the restarted kernel k.
// The fake clock moves only at the restart (to restartedAt, unix ms): a
// receipt stamped earlier was written by the first run.
func checkBatchInvariants(t *testing.T, r *crashRig, k *kernel.Kernel, b *approval.Batch, calls []*batchCall,
	retries map[string]*kernel.Outcome, restartedAt int64) {
	t.Helper()
	amounts := map[string]int64{}
	for _, c := range calls {
		amounts[c.call.RequestID] = c.amount
	}
	l := readBatchLedger(t, r, b.Token.ID, amounts)
	var stored *approval.Batch
	if err := r.w.Store.View(func(tx kernel.ReadTx) error {
		var err error
		stored, err = tx.Batch(b.Token.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if l.uses > *b.Token.MaxCalls || l.amount > b.Token.MaxTotalAmount.Units {
		t.Errorf("the log allows %d calls for %d under a batch signed for %d calls, %d in all",
			l.uses, l.amount, *b.Token.MaxCalls, b.Token.MaxTotalAmount.Units)
	}
	if stored.Usage.Calls != l.uses || stored.Usage.TotalAmount != l.amount {
		t.Errorf("the batch's counters say %d calls, %d; its allow receipts %d calls, %d", stored.Usage.Calls,
			stored.Usage.TotalAmount, l.uses, l.amount)
	}
	for _, c := range calls {
		id := c.call.RequestID
		d := r.tool.deliveries(id)
		if len(d) > 1 {
			t.Errorf("%s: at_most_once refund delivered %d times", id, len(d))
		}
		rec, err := k.Call(id)
		if err != nil {
			t.Errorf("%s: no record after the retry: %v", id, err)
			continue
		}
		if len(d) == 1 && (rec.Status != kernel.StatusAllowed || rec.DecisionReceiptID == "") {
			t.Errorf("%s: the tool ran, yet the call is %s (decision %q)", id, rec.Status, rec.DecisionReceiptID)
		}
		if len(d) == 1 && l.ids[rec.DecisionReceiptID] == nil {
			t.Errorf("%s: the tool ran with no allow receipt in the log", id)
		}
		rc := l.ids[rec.ReceiptID]
		if rc == nil {
			t.Errorf("%s: record %s names receipt %q, not in the log", id, rec.Status, rec.ReceiptID)
			continue
		}
		want := verdictFor(rec)
		if len(want) == 0 || rc.Decision.Verdict != want[0] || rc.RequestID != id {
			t.Errorf("%s: record %s/%s ends in a %q receipt of %s", id, rec.Status, rec.Execution, rc.Decision.Verdict, rc.RequestID)
		}
		if dec := l.ids[rec.DecisionReceiptID]; rec.DecisionReceiptID != "" && dec != nil && dec.Decision.Verdict == receipt.Allow &&
			dec.Metadata["channel"] == kernel.ChannelBatch && dec.Metadata["batch_approval_id"] != b.Token.ID {
			t.Errorf("%s: allowed under another batch %v", id, dec.Metadata["batch_approval_id"])
		}
		// The retry's answer is the record's.
		if out := retries[id]; out != nil && (out.Status != rec.Status || out.ReceiptID != rec.ReceiptID) {
			t.Errorf("%s: retry answered %s/%s; the record is %s/%s", id, out.Status, out.ReceiptID, rec.Status, rec.ReceiptID)
		}
		// The first answer is never contradicted by the log: a success
		// names a receipt of this call, "nothing was written" leaves no
		// decision of the first run.
		switch {
		case c.err == nil:
			if got := l.ids[c.out.ReceiptID]; got == nil || got.RequestID != id {
				t.Errorf("%s: first answer %s names receipt %q, not this call's in the log", id, c.out.Status, c.out.ReceiptID)
			}
			if c.out.Status == kernel.StatusAllowed && len(d) != 1 {
				t.Errorf("%s: answered allowed, delivered %d times", id, len(d))
			}
		case errors.Is(c.err, kernel.ErrOutcomeUnknown):
		case errors.Is(c.err, kernel.ErrUnavailable):
			// Refused before anything was written: whatever is on record
			// was decided by the retry, after the restart.
			for _, rc := range l.byRequest[id] {
				if rc.Timestamp < restartedAt {
					t.Errorf("%s: answered %v, yet the first run's %s receipt %s is durable", id, c.err, rc.Decision.Verdict, rc.ID)
				}
			}
		default:
			t.Errorf("%s: first run answered %v", id, c.err)
		}
	}
}

// resubmit signs c's call again at the kernel's time (the same request id,
// arguments and agent: an SDK retry) and submits it to k.
func resubmit(t *testing.T, r *crashRig, k *kernel.Kernel, c *kernel.ToolCall) *kernel.Outcome {
	t.Helper()
	testkit.Sign(t, c, r.w.Agent, r.clock.Now())
	out, err := k.Submit(context.Background(), c)
	if err != nil {
		t.Errorf("retry of %s after the restart: %v", c.RequestID, err)
		return nil
	}
	return out
}

// A sequence of refunds under a standing approval for 2 calls and $8.00,
// crashed at each of its commits: a $5 refund (covered), a $5 refund
// (over the money left: parked), a $3 refund (covered: the last call and
// the last of the money), a $0.50 refund (no call left: parked). With
// "restart" chiod dies at the crash and restarts; with "heal" only that
// commit fails (an fsync error), chiod lives on, the store heals
// (RecoverAfterHeal) and the agents retry on the same kernel, whose
// memory (delivering marks, answers kept, in-flight ids) is still there.
func TestCrashAtEachCommitOfABatchClaim(t *testing.T) {
	amounts := []int64{500, 500, 300, 50}
	// claim+settle; a claim finding no batch (an empty commit), park,
	// told; claim+settle; no batch, park, told.
	const updates = 10
	for _, mode := range []string{"restart", "heal"} {
		for crashAt := int64(1); crashAt <= updates+1; crashAt++ {
			for _, durable := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/update%d/durable=%v", mode, crashAt, durable), func(t *testing.T) {
					r := newCrashRig(t, "deny", 0, durable)
					b := createRefundBatch(t, r, 2, 800)
					r.cs.n.Store(0)
					r.cs.crashAt, r.cs.heals = crashAt, mode == "heal"
					ctx := context.Background()
					var calls []*batchCall
					for _, a := range amounts {
						c := &batchCall{amount: a, call: r.w.Call(t, "issue_refund", refundArgs(a), "")}
						c.out, c.err = r.w.Kernel.Submit(ctx, c.call)
						calls = append(calls, c)
					}
					r.w.Kernel.WaitSettles()
					if crashAt > updates && r.cs.n.Load() != updates {
						t.Fatalf("the scenario made %d updates, not %d: the crash points are off", r.cs.n.Load(), updates)
					}
					r.clock.Advance(time.Second)
					restartedAt := r.clock.Now().UnixMilli()
					k := r.w.Kernel
					if mode == "restart" {
						k = r.restart(t)
					} else {
						r.cs.crashAt = 0 // healed: the retries' commits go through
						if err := k.RecoverAfterHeal(ctx); err != nil {
							t.Fatal(err)
						}
						wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
						defer cancel()
						if err := k.WaitRecovery(wctx); err != nil {
							t.Fatal(err)
						}
					}
					retries := map[string]*kernel.Outcome{}
					for _, c := range calls {
						retries[c.call.RequestID] = resubmit(t, r, k, c.call)
					}
					// One more $3 refund: the batch must not cover it.
					extra := &batchCall{amount: 300, call: r.w.Call(t, "issue_refund", refundArgs(300), "")}
					extra.out, extra.err = k.Submit(ctx, extra.call)
					k.WaitSettles()
					checkBatchInvariants(t, r, k, b, append(calls, extra), retries, restartedAt)
				})
			}
		}
	}
}

// meetStore holds the first `parties` updates until all of them have
// arrived, then lets them go together: the racing commits (two claims of
// one batch's last call; a cancel and a vote) reach the committer at
// once, and usually share one transaction. Later updates pass.
type meetStore struct {
	kernel.Store
	mu      sync.Mutex
	parties int
	arrived int
	all     chan struct{}
}

func (s *meetStore) arm(parties int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parties, s.arrived, s.all = parties, 0, make(chan struct{})
}

func (s *meetStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	s.mu.Lock()
	wait := s.all
	if s.arrived < s.parties {
		s.arrived++
		if s.arrived == s.parties {
			close(s.all)
		}
	} else {
		wait = nil
	}
	s.mu.Unlock()
	if wait != nil {
		<-wait
	}
	return s.Store.Update(ctx, fn)
}

// newMeetCrashRig is newCrashRig with a meetStore in front of its
// crashStore: the racing updates meet first, then reach the crash
// counter in the order the race lets them go.
func newMeetCrashRig(t *testing.T, action string) (*crashRig, *meetStore) {
	return newHookedMeetCrashRig(t, action, nil)
}

// duringDispatch runs a hook inside each delivery, before the tool answers.
type duringDispatch struct {
	*countingTool
	hook func(kernel.DispatchRequest)
}

func (d *duringDispatch) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	if d.hook != nil {
		d.hook(r)
	}
	return d.countingTool.Dispatch(ctx, r)
}

// newHookedMeetCrashRig is newMeetCrashRig whose tool runs during (if
// set) inside every delivery, the restarted kernel's too.
func newHookedMeetCrashRig(t *testing.T, action string, during func(kernel.DispatchRequest)) (*crashRig, *meetStore) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	cs := &crashStore{}
	meet := &meetStore{Store: cs}
	r := &crashRig{cs: cs, clock: fake}
	r.tool = &countingTool{t: t, store: func() kernel.Store { return r.w.Store }}
	var disp kernel.Dispatcher = r.tool
	if during != nil {
		disp = &duringDispatch{countingTool: r.tool, hook: during}
	}
	r.w = testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(crashPolicy, financeLead.Public(), action), Dispatcher: disp,
		Clock: fake, Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return meet }})
	return r, meet
}

// Two refunds race for the last call of a standing approval (1 call,
// $10): both claims are let go together, and a crash lands at each
// update of what follows (the two claims, the winner's settle, the
// loser's park and told mark). After the restart both agents retry
// their request ids, each twice at once. The batch never covers both.
func TestCrashAtEachCommitOfARaceForTheLastBatchCall(t *testing.T) {
	const updates = 5 // two claims (one finds no batch), settle, park, told
	for crashAt := int64(1); crashAt <= updates+1; crashAt++ {
		for _, durable := range []bool{false, true} {
			t.Run(fmt.Sprintf("update%d/durable=%v", crashAt, durable), func(t *testing.T) {
				r, meet := newMeetCrashRig(t, "deny")
				b := createRefundBatch(t, r, 1, 1000)
				r.cs.n.Store(0)
				r.cs.crashAt, r.cs.durable = crashAt, durable
				meet.arm(2)
				ctx := context.Background()
				calls := []*batchCall{
					{amount: 500, call: r.w.Call(t, "issue_refund", refundArgs(500), "")},
					{amount: 600, call: r.w.Call(t, "issue_refund", refundArgs(600), "")},
				}
				var wg sync.WaitGroup
				for _, c := range calls {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c.out, c.err = r.w.Kernel.Submit(ctx, c.call)
					}()
				}
				wg.Wait()
				r.w.Kernel.WaitSettles()
				if crashAt > updates && r.cs.n.Load() != updates {
					t.Fatalf("the race made %d updates, not %d: the crash points are off", r.cs.n.Load(), updates)
				}
				r.clock.Advance(time.Second)
				restartedAt := r.clock.Now().UnixMilli()
				k := r.restart(t)
				retries := map[string]*kernel.Outcome{}
				var mu sync.Mutex
				for _, c := range calls {
					testkit.Sign(t, c.call, r.w.Agent, r.clock.Now())
					for range 2 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							dup := *c.call
							out, err := k.Submit(ctx, &dup)
							mu.Lock()
							defer mu.Unlock()
							if err != nil && !errors.Is(err, kernel.ErrOutcomeUnknown) {
								t.Errorf("retry of %s: %v", c.call.RequestID, err)
							}
							if out != nil && (retries[c.call.RequestID] == nil || out.Status != kernel.StatusDispatching) {
								retries[c.call.RequestID] = out
							}
						}()
					}
				}
				wg.Wait()
				k.WaitSettles()
				for id, out := range retries {
					if out.Status == kernel.StatusDispatching {
						delete(retries, id) // answered while the other copy ran it: read the record instead
					}
				}
				checkBatchInvariants(t, r, k, b, calls, retries, restartedAt)
				if r.tool.deliveries(calls[0].call.RequestID) != nil && r.tool.deliveries(calls[1].call.RequestID) != nil {
					t.Errorf("both racing refunds ran under a one-call standing approval")
				}
			})
		}
	}
}

// Creating and revoking a standing approval, crashed at its commit before
// and after the commit is durable. An answer of "unavailable" tells the
// approver nothing was written: an approver told so about a create signs
// another batch, and the agent then holds both. Whatever the answer says
// must be what the store holds after the restart.
func TestCrashAtTheCommitOfABatchCreateOrRevoke(t *testing.T) {
	for _, op := range []string{"create", "revoke"} {
		for _, durable := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/durable=%v", op, durable), func(t *testing.T) {
				r := newCrashRig(t, "deny", 0, durable)
				ctx := context.Background()
				max := int64(2)
				var id string
				raw := revSignBatch(t, r.w.Kernel, r.clock.Now(), time.Hour, func(bt *approval.BatchToken) { bt.MaxCalls, id = &max, bt.ID })
				var err error
				if op == "revoke" {
					if _, err := r.w.Kernel.CreateBatch(ctx, raw); err != nil {
						t.Fatal(err)
					}
				}
				r.cs.n.Store(0)
				r.cs.crashAt = 1
				if op == "create" {
					_, err = r.w.Kernel.CreateBatch(ctx, raw)
				} else {
					err = r.w.Kernel.RevokeBatch(ctx, id)
				}
				r.restart(t)
				var stored *approval.Batch
				if err := r.w.Store.View(func(tx kernel.ReadTx) error {
					var err error
					stored, err = tx.Batch(id)
					return err
				}); err != nil && !errors.Is(err, kernel.ErrNotFound) {
					t.Fatal(err)
				}
				changed := stored != nil
				if op == "revoke" {
					changed = stored.Revoked
				}
				switch {
				case err == nil:
					t.Fatalf("the crashed %s was answered success", op)
				case errors.Is(err, kernel.ErrOutcomeUnknown):
					// may or may not: either end is truthful
				case errors.Is(err, kernel.ErrUnavailable) && changed:
					t.Errorf("the %s was answered %q (nothing written), yet it is durable (batch %+v)", op, err, stored.Usage)
				}
			})
		}
	}
}

// Revoking a capability, crashed at its commit before and after the commit
// is durable: as for a standing approval's revocation, "unavailable" (nothing
// written) is never the answer when the revocation is stored.
func TestCrashAtTheCommitOfACapabilityRevoke(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			r := newCrashRig(t, "deny", 0, durable)
			r.cs.n.Store(0)
			r.cs.crashAt = 1
			err := r.w.Kernel.Revoke(context.Background(), "cap-crashed")
			r.restart(t)
			var revoked bool
			if err := r.w.Store.View(func(tx kernel.ReadTx) error {
				var err error
				revoked, err = tx.Revoked("cap-crashed")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			switch {
			case err == nil:
				t.Fatal("the crashed revoke was answered success")
			case errors.Is(err, kernel.ErrOutcomeUnknown):
				// may or may not: either end is truthful
			case errors.Is(err, kernel.ErrUnavailable) && revoked:
				t.Errorf("the revoke was answered %q (nothing written), yet the capability is revoked", err)
			}
		})
	}
}
