package kernel_test

// Races between a call's commits and what happens beside them: two resumes
// of one approved call (a live answer and recovery after a store heal, or a
// replica taking the call over), recovery running between a decision and
// its delivery, a revocation landing between a call's checks and its allow
// commit, and a full commit queue after a durable vote.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// receiptsFor returns every stored receipt of requestID, in seq order.
func receiptsFor(t *testing.T, w *waWorld, requestID string) []*receipt.Receipt {
	t.Helper()
	var out []*receipt.Receipt
	err := w.Store.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(1, tx.LastSeq(), func(_ uint64, raw []byte) bool {
			r, err := receipt.Verify(append([]byte(nil), raw...), w.KernelKey.Public())
			if err != nil {
				t.Fatalf("receipt does not verify: %v", err)
			}
			if r.RequestID == requestID {
				out = append(out, r)
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// holdAt makes the store's nth Update wait for release; reached is closed
// when that update has arrived (and is waiting).
func holdAt(w *waWorld, nth int64) (reached chan struct{}, release func()) {
	reached = make(chan struct{})
	w.store.release = make(chan struct{})
	var once atomic.Bool
	w.store.holdNth = func(n int64) bool {
		if n == nth && once.CompareAndSwap(false, true) {
			close(reached)
			return true
		}
		return false
	}
	return reached, func() { close(w.store.release) }
}

// respondHeldAtFinish answers approval id with tok in the background and
// returns once the live resume's commit after the vote (its finish) has
// reached the store and is held; release lets it go, done gets Respond's
// error.
func respondHeldAtFinish(t *testing.T, w *waWorld, id string, tok []byte) (done chan error, release func()) {
	t.Helper()
	reached, release := holdAt(w, w.store.n.Load()+2)
	done = make(chan error, 1)
	go func() {
		_, err := w.Kernel.Respond(context.Background(), id, tok, "", "")
		done <- err
	}()
	select {
	case <-reached:
	case <-time.After(5 * time.Second):
		t.Fatal("the live resume never reached its commit")
	}
	return done, release
}

// takeOverNow runs recovery, to its end, on a second kernel sharing w's
// store under policy p, as a replica taking this one's calls over does.
// (This kernel's own recovery, after a store heal, waits for a live vote's
// resume instead of overlapping it: TestVoteJustAfterAHealIsResumedOnce.)
func takeOverNow(t *testing.T, w *waWorld, p *policy.Policy) {
	t.Helper()
	other, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: p, Store: w.Store, Dispatcher: w.tool, Clock: w.Clock})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	recoverNow(t, other)
}

// Two resumes of one approved call that both end without running it (here:
// the capability was revoked during the wait) commit ONE final receipt:
// finish commits only while the call is still approved and undecided.
func TestOverlappingResumesCommitOneFinalReceipt(t *testing.T) {
	w := newWAWorld(t, &scriptedTool{})
	ctx := context.Background()
	out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "") // parked
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v", out)
	}
	if err := w.Kernel.Revoke(ctx, w.Cap.ID); err != nil {
		t.Fatal(err)
	}
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	// The vote commits (call -> dispatching, no decision); the live
	// resume's finish (deny: capability revoked) is held.
	done, release := respondHeldAtFinish(t, w, out.ApprovalRequestID, tok)
	// A replica taking the call over runs recovery now: the call is
	// dispatching with no decision, and no delivering mark is held for it.
	takeOverNow(t, w, w.Kernel.Policy())
	release()
	if err := <-done; err != nil {
		t.Logf("live Respond: %v", err)
	}
	var terminal []string
	for _, r := range receiptsFor(t, w, out.RequestID) {
		if r.Decision.Verdict != receipt.Incomplete {
			terminal = append(terminal, fmt.Sprintf("%s/%s (%s)", r.Decision.Verdict, r.Decision.Guard, r.ID))
		}
	}
	if len(terminal) != 1 {
		t.Fatalf("one approved call has %d terminal receipts, want 1: %v", len(terminal), terminal)
	}
}

// Two overlapping resumes that decide differently (the policy changed
// between their checks): recovery's allows, delivers and settles the call;
// the live resume's deny, committed later, must not overwrite a call that
// ran (the log would hold allow AND deny, the record "denied").
func TestStaleDenyNeverOverwritesADeliveredCall(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	// Policy P2 narrows grant "asked" so it no longer covers delete_file:
	// the live resume denies (guard capability-scope).
	narrowed := fmt.Sprintf(writeAheadPolicy, financeLead.Public())
	narrowed = replaceOnce(narrowed, "tool = \"delete_file\"", "tool = \"echo\"")
	p2, err := policy.Parse([]byte(narrowed), "p2.toml")
	if err != nil {
		t.Fatal(err)
	}
	p1 := w.Kernel.Policy()
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	w.Kernel.SetPolicy(p2)
	done, release := respondHeldAtFinish(t, w, out.ApprovalRequestID, tok)
	w.Kernel.SetPolicy(p1) // reverted (SIGHUP again)
	takeOverNow(t, w, p1)  // another replica's recovery resumes: allow, deliver, settle
	if n := len(tool.deliveries(out.RequestID)); n != 1 {
		t.Fatalf("recovery delivered %d times", n)
	}
	release()
	<-done
	rec, _ := w.Kernel.Call(out.RequestID)
	var verdicts []string
	for _, r := range receiptsFor(t, w, out.RequestID) {
		verdicts = append(verdicts, r.Decision.Verdict)
	}
	if rec.Status != kernel.StatusAllowed || len(verdicts) != 2 {
		t.Fatalf("the tool ran once, yet the call is %q (guard %q) with receipts %v; want allowed with [incomplete allow]",
			rec.Status, rec.Guard, verdicts)
	}
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	panic("replaceOnce: not found: " + old)
}

// hookStore runs after, if set, once each Update has returned (n counts
// updates from 1).
type hookStore struct {
	kernel.Store
	n     atomic.Int64
	after atomic.Pointer[func(n int64, err error)]
}

func (s *hookStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	n := s.n.Add(1)
	err := s.Store.Update(ctx, fn)
	if f := s.after.Load(); f != nil {
		(*f)(n, err)
	}
	return err
}

// Recovery (after a store heal) that runs between a live call's decision
// commit and its delivery must leave the call to the live path: the live
// path holds the call's delivering mark from before its decision commits.
// (It used to take it only afterwards, so recovery settled an at_most_once
// call as abandoned and the live path then sent it anyway.)
func TestRecoveryLeavesADecidedCallToItsLivePath(t *testing.T) {
	for _, tc := range []struct{ tool, args string }{
		{"issue_refund", `{"customer_id":"c","amount":5,"currency":"USD"}`}, // at_most_once
		{"echo", `{"msg":"hi"}`}, // at_least_once
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tool := &scriptedTool{}
			hs := &hookStore{}
			w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeAheadPolicy, financeLead.Public()), Dispatcher: tool,
				Server: "pay", Grants: []string{"echo", "refunds", "asked"},
				WrapStore: func(s kernel.Store) kernel.Store { hs.Store = s; return hs }})
			c := w.Call(t, tc.tool, tc.args, "")
			var settledFirst atomic.Pointer[kernel.CallRecord]
			hook := func(n int64, err error) {
				if n != 1 || err != nil {
					return
				}
				// The decision is durable; the live path has not marked the call yet.
				recoverNow(t, w.Kernel)
				rec, _ := w.Kernel.Call(c.RequestID)
				settledFirst.Store(rec)
			}
			hs.after.Store(&hook)
			out, err := w.Kernel.Submit(context.Background(), c)
			hs.after.Store(nil)
			w.Kernel.WaitSettles()
			first := settledFirst.Load()
			rec, _ := w.Kernel.Call(c.RequestID)
			t.Logf("after recovery: %s/%s %q; agent got %+v, %v; final %s/%s",
				first.Status, first.Execution, first.ToolError, out, err, rec.Status, rec.Execution)
			if first.Status != kernel.StatusDispatching || first.Execution != "" {
				t.Fatalf("recovery settled a call its live path owns: %s/%s %q", first.Status, first.Execution, first.ToolError)
			}
			if n := len(tool.deliveries(c.RequestID)); n != 1 || err != nil || out.Status != kernel.StatusAllowed ||
				rec.Status != kernel.StatusAllowed || rec.Execution != kernel.ExecutionSucceeded {
				t.Fatalf("%d deliveries; agent got %+v, %v; final %s/%s", n, out, err, rec.Status, rec.Execution)
			}
		})
	}
}

// fullStore answers its nth Update (counted from 1) with ErrQueueFull, as
// boltstore does when its 16,384-call queue is full: back-pressure from a
// healthy store, which never fails, so it never heals and never calls
// OnHeal (the only trigger of RecoverInFlight besides a restart).
type fullStore struct {
	kernel.Store
	n    atomic.Int64
	full atomic.Int64
}

func (s *fullStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if n := s.n.Add(1); n == s.full.Load() {
		return kernel.ErrQueueFull
	}
	return s.Store.Update(ctx, fn)
}

// A full commit queue (back-pressure from a healthy store, which never
// heals and so never triggers recovery) after a durable vote or a tool's
// answer is waited out, not failed: it used to strand the approved call
// "dispatching" with no decision (and a spent token) until a restart, and
// a settled call's known answer until a restart recorded it "unknown".
func TestFullQueueAfterAVoteOrAnAnswerIsWaitedOut(t *testing.T) {
	t.Run("resume", func(t *testing.T) {
		tool := &scriptedTool{}
		fs := &fullStore{}
		w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeAheadPolicy, financeLead.Public()), Dispatcher: tool,
			Server: "pay", Grants: []string{"echo", "refunds", "asked"},
			WrapStore: func(s kernel.Store) kernel.Store { fs.Store = s; return fs }})
		ctx := context.Background()
		out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
		tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
		fs.full.Store(fs.n.Load() + 2) // the vote commits; resume's commitAllow meets a full queue
		res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
		if err != nil {
			t.Fatalf("Respond after one full queue: %v", err)
		}
		rec, _ := w.Kernel.Call(out.RequestID)
		if res.Call.Status != kernel.StatusAllowed || rec.Status != kernel.StatusAllowed || len(tool.deliveries(out.RequestID)) != 1 {
			t.Fatalf("approved call after one full queue: answered %s, stored %s, delivered %d",
				res.Call.Status, rec.Status, len(tool.deliveries(out.RequestID)))
		}
	})
	t.Run("settle", func(t *testing.T) {
		tool := &scriptedTool{}
		fs := &fullStore{}
		w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeAheadPolicy, financeLead.Public()), Dispatcher: tool,
			Server: "pay", Grants: []string{"echo", "refunds", "asked"},
			WrapStore: func(s kernel.Store) kernel.Store { fs.Store = s; return fs }})
		c := w.Call(t, "issue_refund", `{"customer_id":"c","amount":5,"currency":"USD"}`, "")
		fs.full.Store(fs.n.Load() + 2) // the decision commits; the settle meets a full queue
		out, err := w.Kernel.Submit(context.Background(), c)
		if err != nil {
			t.Fatalf("Submit after one full queue on its settle: %v (the tool ran %d time(s))", err, len(tool.deliveries(c.RequestID)))
		}
		if rec, _ := w.Kernel.Call(c.RequestID); out.Status != kernel.StatusAllowed || rec.Status != kernel.StatusAllowed ||
			rec.Execution != kernel.ExecutionSucceeded || len(tool.deliveries(c.RequestID)) != 1 {
			t.Fatalf("settled call after one full queue: answered %s, stored %s/%s, delivered %d",
				out.Status, rec.Status, rec.Execution, len(tool.deliveries(c.RequestID)))
		}
	})
}

// revokeBeforeNthUpdate commits a revocation of capID just before the
// n-th Update after it is armed (an operator's revoke landing between
// resume's revocation read and its allow commit).
type revokeBeforeNthUpdate struct {
	kernel.Store
	armed atomic.Bool
	count atomic.Int32
	n     int32
	capID string
}

func (s *revokeBeforeNthUpdate) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.armed.Load() && s.count.Add(1) == s.n {
		if err := s.Store.Update(ctx, func(tx kernel.Tx) error { return tx.Revoke(s.capID, 0) }); err != nil {
			return err
		}
	}
	return s.Store.Update(ctx, fn)
}

// A revocation that commits after a call's checks read the capability but
// before its allow decision commits stops the call: the decision's own
// transaction reads the revocation again. For an approved call (vote
// first, then the allow decision) and for a new call.
func TestRevocationBeforeTheAllowCommitDenies(t *testing.T) {
	t.Run("approved call", func(t *testing.T) { revokeRace(t, true) })
	t.Run("new call", func(t *testing.T) { revokeRace(t, false) })
}

func revokeRace(t *testing.T, approved bool) {
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	disp := &fakeDispatcher{}
	var wrap *revokeBeforeNthUpdate
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(testPolicy, approver.Public()), Clock: clk, Dispatcher: disp,
		Agent: testkit.Key(agentK), Grants: []string{"refunds", "echo"},
		WrapStore: func(s kernel.Store) kernel.Store { wrap = &revokeBeforeNthUpdate{Store: s}; return wrap }})
	wrap.capID = w.Cap.ID
	if !approved {
		// The call's View reads "not revoked"; the revocation commits just
		// before its allow decision (the first Update).
		wrap.n = 1
		wrap.armed.Store(true)
		out, err := w.Kernel.Submit(context.Background(), w.Call(t, "echo", `{"msg":"hi"}`, ""))
		if err != nil {
			t.Fatal(err)
		}
		r := w.Receipt(t, out.ReceiptID)
		if n := disp.count(out.RequestID); n != 0 || r.Decision.Verdict != receipt.Deny || r.Decision.Guard != kernel.GuardCapability {
			t.Fatalf("capability revoked before the allow decision committed, yet %+v and %d dispatch(es)", r.Decision, n)
		}
		return
	}
	out, err := w.Kernel.Submit(context.Background(), w.Call(t, "issue_refund",
		`{"customer_id":"c","amount":450,"currency":"USD"}`, `{"purpose":"p","max_amount":{"units":450,"currency":"USD"}}`))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	tok := w.Token(t, out.ApprovalRequestID, approver, "approved", nil)
	wrap.n = 2 // Update 1 = the vote; before Update 2 (the allow decision) the revocation commits
	wrap.armed.Store(true)
	res, err := w.Kernel.Respond(context.Background(), out.ApprovalRequestID, tok, "", "")
	if err != nil {
		t.Fatal(err)
	}
	r := w.Receipt(t, res.ReceiptID)
	if n := disp.count(out.RequestID); n != 0 || r.Decision.Verdict != receipt.Deny || r.Decision.Guard != kernel.GuardCapability {
		t.Fatalf("capability revoked before the allow decision committed, yet %+v and %d dispatch(es)", r.Decision, n)
	}
}

// An oversized approval token is refused as malformed before anything
// parses it or consults the store (here: for an unknown approval id, which
// would otherwise answer "not found").
func TestRespondBoundsTheTokenBeforeParsing(t *testing.T) {
	f := lifecycle(t, "deny")
	big := []byte(`{"id":"at-x","pad":"` + strings.Repeat("a", 4<<20) + `"}`) // 4 MiB
	_, err := f.k.Respond(context.Background(), "ar-does-not-exist", big, "", "")
	if !errors.Is(err, approval.ErrMalformedToken) {
		t.Fatalf("4 MiB token answered %v, want malformed", err)
	}
}
