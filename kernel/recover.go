package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/receipt"
)

// GuardRecovery denies an approved call that cannot be resumed safely
// after a restart (its stored approval token no longer parses).
const GuardRecovery = "recovery"

// recoveryState tracks calls that recovery is finishing.
type recoveryState struct {
	once     sync.Once
	sem      chan struct{}
	wg       sync.WaitGroup
	queued   sync.Map // request id → struct{}: already being recovered
	inFlight atomic.Int64
	failed   atomic.Int64
}

// RecoveryStatus is what /readyz and /metrics report about recovery.
type RecoveryStatus struct {
	InFlight int64 `json:"in_flight"` // calls recovery is finishing now
	Failed   int64 `json:"failed"`    // attempts that failed (they are retried after the store heals or at the next start)
}

// Recovery reports recovery's progress.
func (k *Kernel) Recovery() RecoveryStatus {
	return RecoveryStatus{InFlight: k.recovery.inFlight.Load(), Failed: k.recovery.failed.Load()}
}

// WaitRecovery blocks until the calls recovery has started are finished.
func (k *Kernel) WaitRecovery(ctx context.Context) error {
	done := make(chan struct{})
	go func() { k.recovery.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Recover is called once at start-up, before any call. It counts the last
// minute's calls in the max_calls_per_minute window again, re-arms every
// pending request's deadline (one that passed while the kernel was down
// fires now) and announces any its approvers were never told of
// (Notified), then finishes calls left in flight IN THE BACKGROUND: chiod
// serves at once, and a hanging tool server cannot hold start-up.
func (k *Kernel) Recover(ctx context.Context) error {
	// Before any call is judged: the minute's calls still count
	// (ratelimit_rebuild.go).
	if err := k.rebuildRateWindow(); err != nil {
		return fmt.Errorf("rebuild the max_calls_per_minute window: %w", err)
	}
	if err := k.recountPending(ctx); err != nil {
		return fmt.Errorf("count waiting approval requests: %w", err)
	}
	pending, err := k.pendingRequests()
	if err != nil {
		return err
	}
	p := k.Policy()
	for _, r := range pending {
		k.armTimer(r.ApprovalID, r.ExpiresAt)
		// The policy may have changed while chiod was down: its approvers
		// are the ones that count (a request left with none ends now).
		if _, err := k.reconcile(ctx, p, r.ApprovalID); err != nil {
			// The start fails (closed): on a shared store no heal would
			// reconcile it later, and the request would keep approvers
			// the policy in force no longer trusts.
			return fmt.Errorf("reconcile %s: %w", r.ApprovalID, err)
		}
		// A request whose park or escalation committed while the run that
		// made it died (or was told its commit failed) was never announced.
		if cur, err := k.Approval(r.ApprovalID); err == nil {
			k.announceIfUntold(ctx, cur)
		}
	}
	if r, ok := k.store.(Replicated); ok {
		// Other replicas park requests and die after this start: sweep.
		k.startSweep(r)
	}
	return k.RecoverInFlight(context.WithoutCancel(ctx))
}

// pendingRequests reads every pending approval request, oldest first.
func (k *Kernel) pendingRequests() ([]*approval.Request, error) {
	var pending []*approval.Request
	err := k.store.View(func(tx ReadTx) error {
		return tx.PendingApprovals(func(r *approval.Request) bool { pending = append(pending, r); return true })
	})
	return pending, err
}

// RecoverAfterHeal runs when the store has healed after a failed commit.
// A commit reported failed may have reached the disk anyway (see
// boltstore's heal.go): a request it parked or escalated is pending with
// no deadline armed and no approver told. Each such request gets its
// deadline armed and is announced at its tier; then the calls the failure
// left in flight are finished (RecoverInFlight). A reload whose reconcile
// failed with the store left requests with the approvers of the policy it
// replaced: each is reconciled with the policy in force first, as at a
// start (Recover).
func (k *Kernel) RecoverAfterHeal(ctx context.Context) error {
	pending, err := k.pendingRequests()
	if err != nil {
		return err
	}
	p := k.Policy()
	for _, r := range pending {
		if _, err := k.reconcile(ctx, p, r.ApprovalID); err != nil {
			// The store failed again: its next heal reconciles it.
			slog.Error("reconciling a pending approval with the policy in force failed", "approval_id", r.ApprovalID, "err", err)
		}
		cur, err := k.Approval(r.ApprovalID)
		if err != nil || cur.Status != approval.StatusPending {
			continue // ended by the reconcile, or a vote meanwhile
		}
		if !k.announceIfUntold(ctx, cur) && !k.timerArmed(cur.ApprovalID) {
			k.armTimer(cur.ApprovalID, cur.ExpiresAt)
		}
	}
	// A denial, counted vote or ending reported failed may be durable
	// too: told now if it is (lost_votes.go, lost_endings.go).
	k.tellLostVotes()
	k.tellLostEndings()
	return k.RecoverInFlight(ctx)
}

// RecoverInFlight finishes, at most RecoveryWorkers at a time, every call
// left dispatching: by a crash, or by a store that failed and has healed.
// Calls a live path is sending, or recovery already holds, are skipped.
func (k *Kernel) RecoverInFlight(ctx context.Context) error {
	var inflight []*CallRecord
	var err error
	before := k.unsentNow()
	if r, shared := k.store.(Replicated); shared {
		// Other replicas are delivering their own calls right now: take
		// over only those of replicas that are gone. This kernel's own
		// calls are never orphans, so the answers it keeps for settle
		// commits that failed are added here: the replica sweep records
		// them once the store takes commits again (nothing is sent). The
		// exception is a claim whose answer was lost: for a while after
		// a failed claim, the calls it may have made this kernel's are
		// looked for among its own (ownStranded).
		inflight, err = r.ClaimOrphans(ctx, SweepBatch)
		if err != nil {
			k.lostClaimUntil.Store(k.clock.Now().Add(LostClaimWindow).UnixNano())
		} else if k.clock.Now().UnixNano() < k.lostClaimUntil.Load() {
			var own []*CallRecord
			own, err = k.ownStranded(ctx, r)
			inflight = append(inflight, own...)
		}
		inflight = append(inflight, k.keptAnswers()...)
		inflight = append(inflight, k.uncertainCalls()...)
	} else {
		err = k.store.View(func(tx ReadTx) error {
			return tx.Dispatching(func(c *CallRecord) bool { inflight = append(inflight, c); return true })
		})
	}
	if err != nil {
		return err
	}
	k.forgetUnsent(before, inflight)
	for _, c := range inflight {
		k.recoverInBackground(ctx, c)
	}
	return nil
}

// unsentNow lists the unsent decisions (request id → receipt id) known
// before the calls in flight are read.
func (k *Kernel) unsentNow() map[string]any {
	out := map[string]any{}
	k.unsent.Range(func(id, d any) bool { out[id.(string)] = d; return true })
	return out
}

// forgetUnsent drops the unsent decisions of before whose calls are not
// among inflight, read after them: their commit never happened, or their
// call has finished. One added since before was read is kept, and so is
// one still uncertain: on a shared store uncertainCalls leaves out a call
// whose read failed, and keeps it uncertain to look again at the next
// sweep, which must still know this kernel never sent it.
func (k *Kernel) forgetUnsent(before map[string]any, inflight []*CallRecord) {
	for _, c := range inflight {
		delete(before, c.RequestID)
	}
	for id, d := range before {
		if _, unread := k.uncertain.Load(id); unread {
			continue
		}
		k.unsent.CompareAndDelete(id, d)
	}
}

// recoverInBackground finishes call c on one of recovery's workers (at
// most RecoveryWorkers at a time) and reports whether it started one: a
// call a live path is sending, or recovery already holds, is skipped, and
// so is every call once Close has begun (the next start finishes it). A
// failure is logged and counted (Recovery); on a shared store the call is
// listed among this replica's uncertain calls, which its sweep retries.
func (k *Kernel) recoverInBackground(ctx context.Context, c *CallRecord) bool {
	k.recovery.once.Do(func() { k.recovery.sem = make(chan struct{}, RecoveryWorkers) })
	if k.stopping() {
		return false
	}
	if _, busy := k.delivering.Load(c.RequestID); busy {
		return false
	}
	if _, dup := k.recovery.queued.LoadOrStore(c.RequestID, struct{}{}); dup {
		return false
	}
	_, shared := k.store.(Replicated)
	k.recovery.wg.Add(1)
	k.recovery.inFlight.Add(1)
	go func() {
		defer k.recovery.wg.Done()
		defer k.recovery.inFlight.Add(-1)
		defer k.recovery.queued.Delete(c.RequestID)
		cur, err := k.afterLiveResume(c)
		if cur != nil {
			c = cur
			k.recovery.sem <- struct{}{}
			err = k.recoverCall(ctx, c)
			<-k.recovery.sem
		}
		if err != nil {
			k.recovery.failed.Add(1)
			if _, kept := k.unsettled.Load(c.RequestID); shared && !kept {
				// A call taken over from a replica that is gone is this
				// kernel's now: no other replica (and no sweep's
				// ClaimOrphans) takes it again while this one lives.
				// The next sweep tries it again, like a decision whose
				// commit may be durable (uncertainCalls); an entry the
				// attempt made itself (its own decision's commit
				// failed) names the newer decision and is kept.
				k.uncertain.LoadOrStore(c.RequestID, c.DecisionReceiptID)
			}
			slog.Error("recovering an in-flight call failed; it stays in flight and is retried when the store heals or chiod restarts",
				"request_id", c.RequestID, "err", err)
		}
	}()
	return true
}

// afterLiveResume returns the call recovery is to finish in place of c, a
// call read in flight, or nil when there is nothing left to do. An
// approved call with no decision may be one a live vote on this kernel
// (or a reload's reconcile) is resuming right now: its approval committed
// before c was read, so that resume registered (live_votes.go) before the
// read and is still running while registered. Recovery resuming it too
// decided and sent the call once (commitAllow), but the vote's own resume
// then lost with a conflict, and the approver who decided the call was
// told it was not finished. So recovery waits for that resume to end and
// reads the call again: settled, it is done; still in flight (the resume
// failed, or left a decided call unsettled), recovery finishes it. Close
// ends the wait: the live resume, or the next start, finishes the call.
func (k *Kernel) afterLiveResume(c *CallRecord) (*CallRecord, error) {
	if c.DecisionReceiptID != "" || c.ApprovalID == "" {
		return c, nil // decided: its delivering mark tells who owns it
	}
	done := k.voting.released(c.ApprovalID)
	if done == nil {
		return c, nil
	}
	if hook := k.recoveryAwaitsVote.Swap(nil); hook != nil {
		(*hook)()
	}
	select {
	case <-done:
	case <-k.stop:
		return nil, nil
	}
	cur, err := k.storedCall(c.RequestID)
	if err != nil || cur.Status != StatusDispatching {
		return nil, err
	}
	return cur, nil
}

// uncertainCalls lists the calls whose allow decision's commit was
// reported failed but turned out durable (the database committed, its
// answer was lost: a failover, a cut connection): the live path sent
// nothing, so without this they would stay dispatching until this replica
// restarts. A decision that never committed, or a call since finished, is
// dropped from the set; one that cannot be read is looked at next sweep.
// Calls whose recovery failed here (RecoverInFlight) are in the set too,
// and approved calls whose live resume failed or whose approving vote's
// commit may be durable (recordVote), naming no decision ("").
//
// Only this kernel's own decision (its receipt id) is taken: when it never
// committed, the agent's retry may have been decided by another replica,
// which is delivering that call now and owns it. An approved call still
// without a decision (its vote durable, its decision's commit lost) is
// taken too: recovery decides it, and a decision commits once.
func (k *Kernel) uncertainCalls() []*CallRecord {
	var out []*CallRecord
	k.uncertain.Range(func(key, decision any) bool {
		id := key.(string)
		c, err := k.storedCall(id)
		switch {
		case errors.Is(err, ErrNotFound):
			k.uncertain.Delete(id) // the decision never committed
		case err != nil:
		case c.DecisionReceiptID != "" && c.DecisionReceiptID != decision.(string):
			k.uncertain.Delete(id) // ours never committed: the record is another decision's
		case c.Status != StatusDispatching:
			k.uncertain.Delete(id) // decided otherwise, or finished
		default:
			// Kept until it is seen finished: a recovery that fails (the
			// database still down) is tried again at the next sweep, and
			// the delivering mark keeps two sweeps from both sending it.
			out = append(out, c)
		}
		return true
	})
	return out
}

// ownStranded lists this kernel's own calls in flight that no live path
// holds: after a ClaimOrphans whose answer was lost, the calls that claim
// made this kernel's. No other replica takes a live replica's calls, so
// without this they would stay dispatching until this replica restarts.
//
// A decided call is held by its delivering mark; recoverCall takes the
// mark and reads the record again, so a live path that took a call since
// is left alone. An approved call not yet decided (a replica died between
// the vote and the decision's commit) is held by the vote being recorded
// and resumed on this kernel (voting), which is registered before the
// vote commits and so before this read could see the call approved:
// unregistered now, no live resume will decide it, and recoverCall
// resumes it as at a restart (the decision commits once: commitAllow and
// finish commit only while the call is still undecided).
func (k *Kernel) ownStranded(ctx context.Context, r Replicated) ([]*CallRecord, error) {
	var out []*CallRecord
	for after := ""; ; {
		page, err := r.OwnDispatching(ctx, after, SweepBatch)
		if err != nil {
			return out, err
		}
		for _, c := range page {
			if _, busy := k.delivering.Load(c.RequestID); busy {
				continue
			}
			if c.DecisionReceiptID == "" && k.voting.holds(c.ApprovalID) {
				continue // its live resume decides it
			}
			out = append(out, c)
		}
		if len(page) < SweepBatch {
			return out, nil
		}
		after = page[len(page)-1].RequestID
	}
}

// keptAnswers lists the calls whose tool answered but whose settle commit
// failed (unsettled), for RecoverInFlight to record. recoverCall commits
// the kept answer and never sends the call again.
func (k *Kernel) keptAnswers() []*CallRecord {
	var out []*CallRecord
	k.unsettled.Range(func(_, v any) bool {
		c := *v.(settlement).rec
		out = append(out, &c)
		return true
	})
	return out
}

// errPriorRun: a call found dispatching was decided by an earlier run (or
// before the store failed), which may have sent it.
var errPriorRun = errors.New("an attempt before chiod restarted or its store failed may have reached the tool")

// recoverCall finishes one call found dispatching.
func (k *Kernel) recoverCall(ctx context.Context, c *CallRecord) error {
	if c.DecisionReceiptID == "" {
		return k.recoverApproved(ctx, c)
	}
	// The tool already answered and only the commit failed: record that
	// answer rather than guess.
	if v, ok := k.unsettled.LoadAndDelete(c.RequestID); ok {
		s := v.(settlement)
		if err := k.commitSettlement(ctx, s); err != nil {
			if cur, rerr := k.storedCall(c.RequestID); rerr == nil &&
				(cur.Status != StatusDispatching || cur.DecisionReceiptID != s.rec.DecisionReceiptID) {
				// Another replica took the call over (this one was judged
				// gone) and finished it: the kept answer is moot.
				k.settling.Delete(c.RequestID)
				return fmt.Errorf("the kept answer was not recorded: the call is %s: %w", cur.Status, err)
			}
			k.unsettled.Store(c.RequestID, s)
			return err
		}
		k.settling.Delete(c.RequestID) // an early answer's record is durable now
		k.completed(s.rec)
		return nil
	}
	// The list of calls in flight was read before this worker ran: a live
	// path may have decided, sent or settled the call since. It holds the
	// call's delivering mark from before its decision commits until its
	// outcome is durable (commitAllow), so taking the mark first and then
	// reading the record again tells a call nobody owns from one a live
	// path is finishing.
	if _, busy := k.delivering.LoadOrStore(c.RequestID, struct{}{}); busy {
		return nil // a live path is finishing it
	}
	cur, err := k.storedCall(c.RequestID)
	if err != nil || cur.Status != StatusDispatching || cur.DecisionReceiptID != c.DecisionReceiptID {
		k.delivering.Delete(c.RequestID)
		return err
	}
	d, unsent := k.unsent.LoadAndDelete(c.RequestID)
	if cur.Delivery == AtMostOnce && unsent && d == cur.DecisionReceiptID {
		// This kernel took this decision, and its commit was reported
		// failed (yet is durable): nothing is sent before a decision
		// commits, and any other kernel that takes the call over settles
		// an at_most_once call without sending it. So no attempt can have
		// reached the tool, and this is its one delivery: settling it
		// "unknown" said a call nobody sent may have run, and never ran
		// the approved call. (An at_least_once call is sent below as after
		// a crash: a replica that took it over may be sending it too.)
		_, err := k.deliverMarked(ctx, cur)
		return err
	}
	if cur.Delivery == AtMostOnce {
		// It may have reached the tool: never send it again.
		defer k.delivering.Delete(c.RequestID)
		_, err := k.settle(ctx, cur, DispatchResult{}, &DeliveryError{
			Err: errors.New("chiod stopped while the call was in flight; at_most_once calls are never re-sent"),
		})
		return err
	}
	// at_least_once: the same Idempotency-Key lets the tool deduplicate.
	// The run that decided it may have sent it (the tool may even have
	// answered, the answer lost with that run), so whatever this attempt
	// hears, the call is never recorded "not delivered".
	_, err = k.deliverMarkedAfter(ctx, cur, errPriorRun)
	return err
}

// decidingVote returns the vote that resolved approved req: the one whose
// token its resolution names. A vote resolves with its own token, which
// is the latest vote; a reload that resolves it (reload_resolve.go) names
// the latest counted approval whose agreeing set meets the quorum, and a
// later vote (a denial below deny_quorum, a key the policy no longer
// trusts, an answer that agrees with too few) must never stand in for it. Without a match (a resolution recorded before resolutions named
// their token) the latest vote decides, as before.
func decidingVote(req *approval.Request) *approval.Vote {
	if req.Resolution != nil && req.Resolution.TokenID != "" {
		for i := range req.Votes {
			if req.Votes[i].TokenID == req.Resolution.TokenID {
				return &req.Votes[i]
			}
		}
	}
	return &req.Votes[len(req.Votes)-1]
}

// recoverApproved resumes a call whose approval is durable but whose
// decision was not taken yet: the checks run again, now.
func (k *Kernel) recoverApproved(ctx context.Context, c *CallRecord) error {
	req, err := k.Approval(c.ApprovalID)
	if err != nil {
		return fmt.Errorf("approval %s: %w", c.ApprovalID, err)
	}
	var vote *approval.Vote
	var tok *approval.Token
	if n := len(req.Votes); n > 0 {
		vote = decidingVote(req)
		// The token was verified before it was stored; one that no longer
		// parses is corruption, and guessing (e.g. dropping an amendment)
		// would run a call nobody approved: deny it instead.
		var t approval.Token
		if err := canon.Unmarshal(vote.Token, &t); err != nil {
			now := k.clock.Now()
			p := k.Policy()
			reason := "the stored approval token is unreadable; the call is not run: " + err.Error()
			r := k.chainReceipt(c, p, req, receipt.Decision{Verdict: receipt.Deny, Guard: GuardRecovery, Reason: reason}, vote, now)
			c.Status, c.Guard, c.Reason = StatusDenied, GuardRecovery, reason
			_, err := k.finish(ctx, req, c, r, now)
			return err
		}
		tok = &t
	}
	_, err = k.resume(ctx, req, c, tok, vote, k.clock.Now())
	return err
}
