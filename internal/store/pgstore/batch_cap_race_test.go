package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// A standing approval's limits hold for all replicas together: however
// claims on several replicas (and several claims in one group commit)
// interleave, the calls it admits never pass max_calls, nor their amounts
// max_total_amount. A claim locks the live batches it reads (LiveBatches:
// SELECT … FOR UPDATE) and keeps the lock until its decision commits; a
// claim that waited for the lock reads the row as the other committed it.

var errNoSlot = errors.New("no standing approval covers the call")

// claimSlot takes one call of units USD on demo/issue_refund under batch
// id, as the kernel's tryBatch does: the first live batch that covers it.
func claimSlot(tx kernel.Tx, id string, units int64) error {
	const at = 1_800_000_000
	amount := &approval.Amount{Units: units, Currency: "USD"}
	var used *approval.Batch
	err := tx.LiveBatches(at, func(b *approval.Batch) bool {
		if b.Token.ID == id && b.Covers("", "demo", "issue_refund", amount, at) {
			used = b
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	if used == nil {
		return errNoSlot
	}
	used.Use(amount)
	return tx.PutBatch(used)
}

// waitForBatchLockWaiters waits until enough reports true of the number
// of backends of this database waiting on a lock while running a
// statement on chio_batches.
func waitForBatchLockWaiters(t *testing.T, c *pgx.Conn, enough func(waiting int) bool) {
	t.Helper()
	eventually(t, "statements on chio_batches waiting on a lock", func() bool {
		var n int
		err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND wait_event_type = 'Lock' AND query LIKE '%chio_batches%'`).Scan(&n)
		return err == nil && enough(n)
	})
}

// A batch read by key early in a transaction (tx.Batch) is cached for
// the rest of it, and LiveBatches later in the same transaction uses that
// cached row, not the one its own statement returned. That is sound only
// because the read by key locked the row: a claim on another replica
// waits, and the cached row is still the row when this one commits. Were
// the early read unlocked, the other replica's claim would commit in
// between and this one would take its amount a second time from the
// stale cached row (a money limit retires nothing, so the row is still
// live and returned).
func TestBatchReadEarlyIsLockedSoNoReplicaSpendsTheSameAmount(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	total := &approval.Amount{Units: 100, Currency: "USD"}
	if err := a.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutBatch(&approval.Batch{Token: &approval.BatchToken{ID: "ba-cap", Approver: "k", ServerPattern: "demo",
			ToolPattern: "issue_refund", MaxTotalAmount: total, NotAfter: 1 << 40}, Raw: []byte(`{}`)})
	}); err != nil {
		t.Fatal(err)
	}
	watcher, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(context.Background())

	read, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) }) // a failing test still lets a commit
	doneA := make(chan error, 1)
	go func() {
		first := true
		doneA <- a.Update(context.Background(), func(tx kernel.Tx) error {
			if _, err := tx.Batch("ba-cap"); err != nil { // cached, and locked
				return err
			}
			if first {
				first = false
				close(read)
				<-release
			}
			return claimSlot(tx, "ba-cap", 60)
		})
	}()
	<-read
	doneB := make(chan error, 1)
	go func() {
		doneB <- b.Update(context.Background(), func(tx kernel.Tx) error { return claimSlot(tx, "ba-cap", 60) })
	}()
	// b's claim either waits on a's lock or (were the read unlocked)
	// commits at once.
	var errB error
	bDone := false
	waitForBatchLockWaiters(t, watcher, func(waiting int) bool {
		select {
		case errB = <-doneB:
			bDone = true
		default:
		}
		return bDone || waiting >= 1
	})
	releaseOnce.Do(func() { close(release) })
	errA := <-doneA
	if !bDone {
		errB = <-doneB
	}
	admitted := 0
	for _, err := range []error{errA, errB} {
		switch {
		case err == nil:
			admitted++
		case !errors.Is(err, errNoSlot):
			t.Fatal(err)
		}
	}
	var spent int64
	a.View(func(tx kernel.ReadTx) error {
		bt, err := tx.Batch("ba-cap")
		if err != nil {
			t.Fatal(err)
		}
		spent = bt.Usage.TotalAmount
		return nil
	})
	if admitted != 1 || spent != 60 {
		t.Fatalf("two 60 USD claims under a 100 USD standing approval: %d admitted (a: %v, b: %v), %d USD recorded; "+
			"want exactly one admitted and 60 recorded", admitted, errA, errB, spent)
	}
}

// payPolicy: refunds (with an amount) that always need one approver, who
// may sign standing approvals for them.
const payPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
action = "charge"
amount = "/amount"
currency = "/currency"

[[grants]]
id = "pay"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Lead"
`

// payWorld is kernels sharing one database under payPolicy, and an
// agent's capability for the refunds grant.
type payWorld struct {
	rs     []replica
	disp   *countingDispatcher
	agent  keys.PrivateKey
	lead   keys.PrivateKey
	capRaw []byte
	dsn    string
}

// payReplicas starts n kernels on one new database.
func payReplicas(t *testing.T, n int) *payWorld {
	t.Helper()
	w := &payWorld{disp: &countingDispatcher{calls: map[string]int{}}, dsn: pgtest.Database(t),
		agent: keys.FromSeed([]byte("agent-agent-agent-agent-agent-32")),
		lead:  keys.FromSeed([]byte("approver-a-approver-a-approver-a"))}
	p, err := policy.Parse([]byte(fmt.Sprintf(payPolicy, w.lead.Public())), "pay.toml")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		st := openPG(t, w.dsn)
		clk := clock.NewFake(time.Unix(1_800_000_000, 0))
		w.rs = append(w.rs, replica{k: startKernel(t, p, st, st, w.disp, clk), store: st, clock: clk})
	}
	if w.capRaw, _, err = w.rs[0].k.IssueCapability(w.agent.Public(), []string{"pay"}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	return w
}

// createBatch signs and stores a one-hour standing approval (id ba-cap)
// for demo/issue_refund with the limits mutate sets.
func (w *payWorld) createBatch(t *testing.T, mutate func(*approval.BatchToken)) {
	t.Helper()
	k, now := w.rs[0].k, w.rs[0].clock.Now()
	bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: "ba-cap", Approver: w.lead.Public().String(),
		Audience: k.PublicKey().String(), ServerPattern: "demo", ToolPattern: "issue_refund",
		NotBefore: now.Unix(), NotAfter: now.Add(time.Hour).Unix()}
	mutate(bt)
	raw, err := bt.Sign(w.lead)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.CreateBatch(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
}

// pay submits a refund of units USD on replica i.
func (w *payWorld) pay(t *testing.T, i int, units int64) (*kernel.Outcome, error) {
	call := testkit.NewCall(t, w.agent, w.capRaw, "demo", "issue_refund", fmt.Sprintf(`{"amount":%d,"currency":"USD"}`, units), "",
		w.rs[i].clock.Now())
	return w.rs[i].k.Submit(context.Background(), call)
}

// batchAllows counts the allow receipts naming the standing approval,
// and the calls it admitted and their amount as its row records them.
func (w *payWorld) batchAllows(t *testing.T) (receipts int, usage approval.BatchUsage) {
	t.Helper()
	st := w.rs[0].store
	err := st.QueryReceipts(receipt.Query{Decode: true}, func(_ uint64, _ []byte, r *receipt.Receipt) bool {
		if r.Decision.Verdict == receipt.Allow && r.Metadata["batch_approval_id"] == "ba-cap" {
			receipts++
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	st.View(func(tx kernel.ReadTx) error {
		bt, err := tx.Batch("ba-cap")
		if err != nil {
			t.Fatal(err)
		}
		usage = bt.Usage
		return nil
	})
	return receipts, usage
}

// A third replica's claim holds the standing approval's row (its decision
// not yet committed) while replicas a and b each claim what is left: both
// wait on the row, and when the third commits, exactly one of them finds
// room. Were the rows read without the lock, a and b would both judge the
// batch as it was before the third's claim and both be allowed.
func TestBatchLastSlotClaimedOnThreeReplicasAtOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits func(*approval.BatchToken)
		units  int64 // the third's claim; a and b claim 40 each
	}{
		{"max_calls", func(bt *approval.BatchToken) { n := int64(2); bt.MaxCalls = &n }, 40},
		{"max_total_amount", func(bt *approval.BatchToken) { bt.MaxTotalAmount = &approval.Amount{Units: 100, Currency: "USD"} }, 60},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := payReplicas(t, 3)
			w.createBatch(t, c.limits)
			watcher, err := pgx.Connect(context.Background(), w.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer watcher.Close(context.Background())

			held, release := make(chan struct{}), make(chan struct{})
			var releaseOnce sync.Once
			defer releaseOnce.Do(func() { close(release) }) // a failing test still lets the third commit
			third := make(chan error, 1)
			go func() {
				first := true
				third <- w.rs[2].store.Update(context.Background(), func(tx kernel.Tx) error {
					if err := claimSlot(tx, "ba-cap", c.units); err != nil {
						return err
					}
					if first {
						first = false
						close(held)
						<-release
					}
					return nil
				})
			}()
			<-held
			type answer struct {
				out *kernel.Outcome
				err error
			}
			answers := make([]chan answer, 2)
			for i := range answers {
				answers[i] = make(chan answer, 1)
				go func(i int) {
					out, err := w.pay(t, i, 40)
					answers[i] <- answer{out, err}
				}(i)
			}
			// Each of a and b waits on the third's row, or (were the rows
			// read unlocked) has already been answered.
			got := make([]*answer, 2)
			answered := func() int {
				n := 0
				for i := range got {
					if got[i] == nil {
						select {
						case a := <-answers[i]:
							got[i] = &a
						default:
						}
					}
					if got[i] != nil {
						n++
					}
				}
				return n
			}
			waitForBatchLockWaiters(t, watcher, func(waiting int) bool { return answered()+waiting >= 2 })
			releaseOnce.Do(func() { close(release) })
			if err := <-third; err != nil {
				t.Fatal(err)
			}
			outs, errs := make([]*kernel.Outcome, 2), make([]error, 2)
			for i := range got {
				if got[i] == nil {
					a := <-answers[i]
					got[i] = &a
				}
				outs[i], errs[i] = got[i].out, got[i].err
			}
			allowed := 0
			for i := range outs {
				if errs[i] != nil {
					t.Fatalf("replica %d: %v", i, errs[i])
				}
				switch outs[i].Status {
				case kernel.StatusAllowed:
					allowed++
				case kernel.StatusPendingApproval:
				default:
					t.Fatalf("replica %d: %+v", i, outs[i])
				}
			}
			receipts, usage := w.batchAllows(t)
			if allowed != 1 || receipts != 1 || usage.Calls != 2 || usage.TotalAmount != c.units+40 {
				t.Fatalf("one slot left, claimed by two replicas at once: %d allowed (%d receipts name the batch), "+
					"usage %+v; want one allowed, the other parked, usage {2 %d}", allowed, receipts, usage, c.units+40)
			}
		})
	}
}

// Many calls on three replicas at once, several in each replica's group
// commits (whose functions run concurrently and run again on conflict):
// the standing approval admits exactly its limit, every admitted call is
// counted in its row, and every call past the limit is parked.
func TestBatchCapsHoldUnderConcurrentCallsOnReplicas(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits func(*approval.BatchToken)
		want   int64
	}{
		{"max_calls", func(bt *approval.BatchToken) { n := int64(10); bt.MaxCalls = &n }, 10},
		{"max_total_amount", func(bt *approval.BatchToken) { bt.MaxTotalAmount = &approval.Amount{Units: 50, Currency: "USD"} }, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := payReplicas(t, 3)
			w.createBatch(t, c.limits)
			const calls = 36
			var mu sync.Mutex
			allowed, parked := int64(0), 0
			var wg sync.WaitGroup
			for i := 0; i < calls; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					out, err := w.pay(t, i%len(w.rs), 7)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil:
						t.Errorf("call %d: %v", i, err)
					case out.Status == kernel.StatusAllowed:
						allowed++
					case out.Status == kernel.StatusPendingApproval:
						parked++
					default:
						t.Errorf("call %d: %+v", i, out)
					}
				}(i)
			}
			wg.Wait()
			receipts, usage := w.batchAllows(t)
			if allowed != c.want || receipts != int(c.want) || usage.Calls != c.want || usage.TotalAmount != 7*c.want ||
				parked != calls-int(c.want) {
				t.Fatalf("%d calls of 7 USD at once: %d allowed, %d parked, %d receipts name the batch, usage %+v; "+
					"want %d allowed, the rest parked", calls, allowed, parked, receipts, usage, c.want)
			}
		})
	}
}
