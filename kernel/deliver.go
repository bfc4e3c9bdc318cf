package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// Write-ahead dispatch. An allowed call moves through three durable states:
//
//	decided    the allow receipt and the call record (status dispatching)
//	           are committed; nothing has been sent yet
//	in flight  the tool may have seen the call (no durable mark: a crash
//	           here looks exactly like "decided")
//	settled    the call record carries the execution; a failure also has
//	           an incomplete receipt chained to the allow receipt
//
// A crash leaves a call decided/in flight; Recover re-sends it with the
// same Idempotency-Key (at_least_once) or settles it as unknown
// (at_most_once). Nothing is sent before the decision is durable: a store
// that cannot commit never dispatches.

// deliveryPlan is how one tool's calls are delivered.
type deliveryPlan struct {
	semantics string        // AtLeastOnce | AtMostOnce
	deadline  time.Duration // how long transient failures are retried
}

// planFor reads the tool's declared delivery from the policy in force; a
// tool the policy does not declare takes its server's settings.
func planFor(p *policy.Policy, server, tool string) deliveryPlan {
	pl := deliveryPlan{semantics: AtLeastOnce, deadline: DefaultRetryDeadline}
	if s, ok := p.Server(server); ok {
		if s.Delivery != "" {
			pl.semantics = s.Delivery
		}
		if s.RetryDeadlineSeconds > 0 {
			pl.deadline = time.Duration(s.RetryDeadlineSeconds) * time.Second
		}
	}
	if t, ok := p.Tool(server, tool); ok {
		if t.Delivery != "" {
			pl.semantics = t.Delivery
		}
		if t.RetryDeadlineSeconds > 0 {
			pl.deadline = time.Duration(t.RetryDeadlineSeconds) * time.Second
		}
	}
	return pl
}

// errRevokedAtDecision aborts an allow decision's transaction when the
// call's capability was revoked after its checks read it: the revocation
// is durable first, so the call must be denied, never dispatched.
var errRevokedAtDecision = errors.New("capability revoked before the allow decision committed")

// errExpiredAtDecision: likewise for a capability that expired between the
// checks and the commit (a loaded store, a vote waiting out back-pressure).
var errExpiredAtDecision = errors.New("capability expired before the allow decision committed")

// capabilityLiveIn checks, inside the decision's own commit, that rec's
// capability is neither revoked (errRevokedAtDecision) nor expired on the
// clock read there (errExpiredAtDecision).
func (k *Kernel) capabilityLiveIn(tx Tx, rec *CallRecord) error {
	switch revoked, err := tx.Revoked(rec.CapabilityID); {
	case err != nil:
		return err
	case revoked:
		return errRevokedAtDecision
	}
	if rec.CapabilityExpiresAt != 0 && k.clock.Now().Unix() >= rec.CapabilityExpiresAt {
		return errExpiredAtDecision
	}
	return nil
}

// mayHaveCommitted reports whether a failed commit may nonetheless be
// durable: a store failure other than a full queue or a refusal made
// before anything was written.
func mayHaveCommitted(err error) bool {
	return errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrQueueFull) && !errors.Is(err, ErrNotCommitted)
}

// capabilityGoneAtDecision maps commitAllow's two capability refusals to
// the deny they become; ok is false for any other error.
func capabilityGoneAtDecision(err error) (reason string, ok bool) {
	switch {
	case errors.Is(err, errRevokedAtDecision):
		return ErrCapabilityRevoked.Error(), true
	case errors.Is(err, errExpiredAtDecision):
		return errExpiredAtDecision.Error(), true
	}
	return "", false
}

// commitAllow makes an allow decision durable BEFORE the tool sees the
// call: the signed allow receipt and the call record (status dispatching)
// in one group commit. fresh is true for a new call (no record may exist
// yet); otherwise the record must be an approved call whose decision has
// not been taken. extra runs in the same transaction (a standing
// approval's counters, the approval's resolution).
//
// On success the caller holds the call's delivering mark and must deliver
// it with deliverMarked. The mark is taken BEFORE the decision is durable:
// recovery (after a store heal) skips marked calls, so it never finds this
// call decided but unowned and settles or re-sends it while the caller
// goes on to send it. On failure the mark is released.
//
// The capability's revocation is read again inside the decision's own
// transaction (errRevokedAtDecision): a revocation that commits between
// the call's checks and this commit still stops the call.
func (k *Kernel) commitAllow(ctx context.Context, p *policy.Policy, rec *CallRecord, r *receipt.Receipt, fresh bool, extra func(Tx) error) error {
	if _, busy := k.delivering.LoadOrStore(rec.RequestID, struct{}{}); busy {
		return fmt.Errorf("%w: call %s is being delivered", ErrConflict, rec.RequestID)
	}
	// rec changes only if the commit succeeds (a batch claim that finds no
	// standing approval falls back to parking this same record).
	next := *rec
	next.Delivery = planFor(p, rec.Server, rec.Tool).semantics
	r.Metadata["delivery"] = next.Delivery
	next.Status = StatusDispatching
	next.DecisionReceiptID, next.ReceiptID, next.UpdatedAt = r.ID, r.ID, r.Timestamp
	count := k.tracksFirstN(rec.GrantID)
	// An approved call's caller waits out a full queue (its vote is
	// durable: back-pressure must not strand it), outside policyMu
	// (commitAfterVoteWhileInForce); a new call's is its answer.
	err := k.update(ctx, func(tx Tx) error {
		cur, err := tx.Call(rec.RequestID)
		switch {
		case fresh && err == nil:
			return ErrRequestUsed // a record appeared since we looked: never overwrite
		case fresh && !errors.Is(err, ErrNotFound):
			return err
		case !fresh && err != nil:
			return err
		case !fresh && (cur.Status != StatusDispatching || cur.DecisionReceiptID != ""):
			return fmt.Errorf("%w: call %s is %s", ErrConflict, rec.RequestID, cur.Status)
		}
		if err := k.capabilityLiveIn(tx, rec); err != nil {
			return err
		}
		if extra != nil {
			if err := extra(tx); err != nil {
				return err
			}
		}
		if count {
			if err := bumpCounter(tx, firstNKey(rec.GrantID, rec.Subject)); err != nil {
				return err
			}
		}
		tx.AppendReceipt(r)
		return tx.PutCall(&next)
	})
	if err != nil {
		defer k.delivering.Delete(rec.RequestID) // after the maps below: recovery then finds them
		if mayHaveCommitted(err) {
			// A commit reported failed may still have reached the disk (and
			// recovery then runs the call): never "nothing was allowed".
			// On a shared store no heal hook runs: this replica's own sweep
			// looks again (uncertainCalls). bbolt's heal recovers it.
			if _, shared := k.store.(Replicated); shared {
				// The decision's receipt id tells this decision's record
				// from another replica's decision of the same request id.
				k.uncertain.Store(rec.RequestID, r.ID)
			}
			// Nothing was sent: an at_most_once call's recovery sends
			// it (recoverCall). Stored after uncertain, which lists it.
			k.unsent.Store(rec.RequestID, r.ID)
			return fmt.Errorf("%w: the allow decision's commit failed and may be durable: %w", ErrOutcomeUnknown, err)
		}
		return err
	}
	*rec = next
	k.allowDurable(rec.RequestID)
	return nil
}

func bumpCounter(tx Tx, key string) error {
	n, err := tx.Counter(key)
	if err != nil {
		return err
	}
	return tx.SetCounter(key, n+1)
}

// deliverMarked sends a decided call to its tool (retrying what is
// transient, per the tool's delivery semantics) and settles it. An
// approved call's request (rec.ApprovalID) learns the call's fate in its
// resolution. The caller holds rec's delivering mark (commitAllow, or
// recovery): recovery and a live delivery never both send. The mark is
// released when the call's outcome is durable (or left for the next
// start).
func (k *Kernel) deliverMarked(ctx context.Context, rec *CallRecord) (*Outcome, error) {
	return k.deliverMarkedAfter(ctx, rec, nil)
}

// deliverMarkedAfter is deliverMarked for a call an earlier attempt may
// already have reached (priorAttempt, non-nil, says why): its outcome can
// then never be "not delivered" (see sendWithRetry).
func (k *Kernel) deliverMarkedAfter(ctx context.Context, rec *CallRecord, priorAttempt error) (*Outcome, error) {
	res, derr := k.sendWithRetry(ctx, rec, priorAttempt)
	if derr != nil && k.stopping() {
		k.delivering.Delete(rec.RequestID)
		slog.Warn("shutting down: a delivery was cut off; the call stays in flight and is finished at the next start",
			"request_id", rec.RequestID, "server", rec.Server, "tool", rec.Tool, "delivery", rec.Delivery, "err", derr)
		return nil, fmt.Errorf("%w: shutting down; call %s stays in flight and is finished at the next start", ErrOutcomeUnknown, rec.RequestID)
	}
	s := k.settlementOf(rec, res, derr)
	if answersEarly(s) && k.settleInBackground(s) { // releases the delivering mark when durable
		return OutcomeOf(rec), nil
	}
	defer k.delivering.Delete(rec.RequestID)
	return k.commitSettled(ctx, s)
}

// sendWithRetry makes delivery attempts until one produces a tool result,
// a failure is permanent, or the tool's retry deadline would pass. Under
// at_most_once only failures that certainly did not reach the tool are
// retried. priorAttempt, when non-nil, is why an attempt before these may
// have reached the tool.
func (k *Kernel) sendWithRetry(ctx context.Context, rec *CallRecord, priorAttempt error) (DispatchResult, error) {
	plan := planFor(k.Policy(), rec.Server, rec.Tool)
	if rec.Delivery != "" {
		plan.semantics = rec.Delivery // fixed when the decision was taken
	}
	deadline := k.clock.Now().Add(plan.deadline)
	backoff := RetryBackoffMin
	// Once an attempt may have reached the tool, the call can never again
	// be "not delivered", whatever later attempts say (a tool still running
	// the first one answers re-deliveries "busy"): the outcome is unknown.
	mayHaveRun := priorAttempt
	maybeReached := 0 // attempts, this run's and the prior one, that may have reached the tool
	if priorAttempt != nil {
		maybeReached = 1
	}
	giveUp := func(res DispatchResult, err error) (DispatchResult, error) {
		var de *DeliveryError
		if mayHaveRun != nil && (errors.As(err, &de) && de.NotDelivered || errors.Is(err, ErrUnknownServer)) {
			// %v, not %w: the chain must no longer read as "not delivered".
			return res, &DeliveryError{Err: fmt.Errorf("%v (an earlier attempt may have reached the tool: %v)", err, mayHaveRun)}
		}
		return res, err
	}
	for attempt := 1; ; attempt++ {
		if attempt > 1 || priorAttempt != nil {
			// A re-send is a new delivery of an old decision: a capability
			// revoked since (the operator's answer to a compromised agent)
			// stops it. The first send needs no look: the decision's own
			// commit checked revocation.
			if err := k.revokedSince(rec); err != nil {
				return giveUp(DispatchResult{}, err)
			}
		}
		rec.Attempts = attempt
		dctx, cut := k.untilClose(ctx) // Close cuts an attempt still running off
		res, err := k.dispatcher.Dispatch(dctx, DispatchRequest{RequestID: rec.RequestID, Server: rec.Server,
			Tool: rec.Tool, Arguments: sentArguments(rec), Attempt: attempt})
		cut()
		if err == nil && res.ToolError != "" && mayHaveRun != nil {
			// A failure answered to THIS attempt says nothing of an earlier
			// one that may have reached the tool (a tool that crashed after
			// its effect answers the repeat "outcome unknown", 409): the
			// call may have run, so its outcome is unknown, not tool_error.
			return DispatchResult{}, &DeliveryError{Err: fmt.Errorf("attempt %d answered %q, but an earlier attempt may have reached the tool: %v",
				attempt, clip(res.ToolError, MaxToolErrorLen/2), mayHaveRun)}
		}
		if err == nil {
			return res, nil
		}
		var de *DeliveryError
		certainlyNot := errors.As(err, &de) && de.NotDelivered || errors.Is(err, ErrUnknownServer)
		if !certainlyNot {
			maybeReached++
			if mayHaveRun == nil {
				mayHaveRun = err
			}
		}
		if !errors.As(err, &de) || !de.Retryable || (plan.semantics == AtMostOnce && !de.NotDelivered) {
			return giveUp(res, err)
		}
		if maybeReached >= MaxMaybeReachedAttempts {
			// A poison call: each re-send may run it again, or kill the
			// server again. It is settled "unknown", not re-sent.
			return giveUp(res, fmt.Errorf("gave up after %d attempts that may each have reached the tool: %w", maybeReached, err))
		}
		// Full jitter around the current step, so tools coming back are not
		// hit by every parked retry at once; Retry-After wins when longer.
		wait := backoff/2 + rand.N(backoff/2+1)
		if de.RetryAfter > wait {
			wait = de.RetryAfter
		}
		if k.clock.Now().Add(wait).After(deadline) {
			return giveUp(res, fmt.Errorf("gave up after %d attempts (retry deadline %s): %w", attempt, plan.deadline, err))
		}
		if err := k.sleep(ctx, wait); err != nil {
			return giveUp(res, err)
		}
		backoff = min(backoff*2, RetryBackoffMax)
	}
}

// revokedSince refuses to send rec again once its capability is revoked,
// or when that cannot be read (fail closed), or once its issuer is no
// longer trusted (chiod restarted without that authority_key). It is "not
// delivered" for this attempt; giveUp turns it into "unknown" if an
// earlier attempt may have reached the tool.
func (k *Kernel) revokedSince(rec *CallRecord) error {
	if rec.CapabilityIssuer != "" && !k.trustsIssuer(rec.CapabilityIssuer) {
		return &DeliveryError{Err: fmt.Errorf("not sent again: its capability's issuer %s is no longer a trusted authority", rec.CapabilityIssuer), NotDelivered: true}
	}
	var revoked bool
	err := k.store.View(func(tx ReadTx) error {
		var err error
		revoked, err = tx.Revoked(rec.CapabilityID)
		return err
	})
	switch {
	case err != nil:
		return &DeliveryError{Err: fmt.Errorf("not sent again: its capability's revocation state cannot be read: %w", err), NotDelivered: true}
	case revoked:
		return &DeliveryError{Err: errors.New("not sent again: its capability was revoked after the call was allowed"), NotDelivered: true}
	}
	return nil
}

// sleep waits d on the kernel's clock.
func (k *Kernel) sleep(ctx context.Context, d time.Duration) error {
	done := make(chan struct{})
	t := k.clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	case <-k.stop:
		t.Stop()
		return ErrUnavailable
	}
}

// settle records what became of a delivered call. Success is a call record
// update; a failure also gets an incomplete receipt chained to the allow
// receipt, so the log says the allowed effect did not (or may not) happen.
func (k *Kernel) settle(ctx context.Context, rec *CallRecord, res DispatchResult, derr error) (*Outcome, error) {
	return k.commitSettled(ctx, k.settlementOf(rec, res, derr))
}

// settlementOf settles rec in memory: its execution, output and (for a
// failure) the incomplete receipt.
func (k *Kernel) settlementOf(rec *CallRecord, res DispatchResult, derr error) settlement {
	now := k.clock.Now()
	rec.Output, rec.ToolError = res.Output, ""
	var de *DeliveryError
	switch {
	case derr == nil && len(res.Output) > MaxToolOutputBytes:
		rec.Execution, rec.ToolError, rec.Output = ExecutionToolError, "tool output too large", nil
	case derr == nil && res.ToolError != "":
		rec.Execution, rec.ToolError = ExecutionToolError, res.ToolError
	case derr == nil:
		rec.Execution = ExecutionSucceeded
	case errors.Is(derr, ErrUnknownServer) || errors.As(derr, &de) && de.NotDelivered:
		rec.Execution, rec.ToolError, rec.Output = ExecutionNotDelivered, ToolErrorNotDelivered+derr.Error(), nil
	default:
		rec.Execution, rec.ToolError, rec.Output = ExecutionUnknown, ToolErrorUnknown+derr.Error(), nil
	}
	rec.ToolError = clip(rec.ToolError, MaxToolErrorLen)
	rec.Status, rec.UpdatedAt = StatusAllowed, now.UnixMilli()
	var r *receipt.Receipt
	if rec.Execution != ExecutionSucceeded {
		p := k.Policy()
		r = k.newReceipt(rec, p, receipt.Decision{Verdict: receipt.Incomplete, Reason: rec.ToolError}, map[string]any{
			"previous_receipt_id": rec.DecisionReceiptID, "execution": rec.Execution,
			"tool_error": rec.ToolError, "attempts": rec.Attempts, "delivery": rec.Delivery,
		}, now)
		rec.ReceiptID = r.ID
	}
	return settlement{rec: rec, receipt: r}
}

// commitSettled makes a settlement durable, then answers with it.
func (k *Kernel) commitSettled(ctx context.Context, s settlement) (*Outcome, error) {
	rec := s.rec
	if err := k.commitSettlement(ctx, s); err != nil {
		// The tool has answered but the store cannot say so yet: keep the
		// answer so that recovery (after the store heals) records it rather
		// than guessing. A crash loses it; then the delivery rules apply.
		k.unsettled.Store(rec.RequestID, s)
		// The tool may have acted: never let this read as "nothing was
		// allowed" (both sentinels match; the API answers outcome_unknown).
		return nil, fmt.Errorf("%w: call %s: %w", ErrOutcomeUnknown, rec.RequestID, err)
	}
	return k.completed(rec), nil
}

// settlement is a settled call waiting for its commit.
type settlement struct {
	rec     *CallRecord
	receipt *receipt.Receipt // nil on success
}

// commitSettlement commits a settled call. Its tool has answered, so a
// full commit queue is waited out (updateAfterVote) rather than failed.
func (k *Kernel) commitSettlement(ctx context.Context, s settlement) error {
	rec := s.rec
	return k.updateAfterVote(ctx, func(tx Tx) error {
		cur, err := tx.Call(rec.RequestID)
		if err != nil {
			return err
		}
		if cur.Status != StatusDispatching || cur.DecisionReceiptID != rec.DecisionReceiptID {
			return fmt.Errorf("%w: call %s is %s", ErrConflict, rec.RequestID, cur.Status)
		}
		if rec.ApprovalID != "" {
			req, err := tx.Approval(rec.ApprovalID)
			if err != nil {
				return err
			}
			if req.Resolution != nil {
				req.Resolution.CallStatus, req.Resolution.ToolError = rec.Status, rec.ToolError
			}
			if err := tx.PutApproval(req); err != nil {
				return err
			}
		}
		if s.receipt != nil {
			tx.AppendReceipt(s.receipt)
		}
		return tx.PutCall(rec)
	})
}

// completed publishes a settled call and renders its outcome.
func (k *Kernel) completed(rec *CallRecord) *Outcome {
	out := OutcomeOf(rec)
	k.events.publish(Event{Type: EventCallCompleted, Call: out})
	return out
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// decidedBy names who signed the deciding vote (empty for none).
func decidedBy(vote *approval.Vote) string {
	if vote == nil {
		return ""
	}
	return nameOr(vote.DisplayName, vote.Approver)
}
