package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/receipt"
)

// resume runs an approved call: re-validate the capability, the grant and
// the non-approval guards against the policy in force NOW, apply an
// amendment (checked again like a new call), make the chained allow
// receipt durable, then deliver the call (write-ahead, see deliver.go).
// A check that fails ends the chain with a deny receipt by that guard: an
// approval is not a promise that the call runs.
func (k *Kernel) resume(ctx context.Context, req *approval.Request, rec *CallRecord, tok *approval.Token, vote *approval.Vote, now time.Time) (*Outcome, error) {
	p := k.Policy()
	parked := *rec // as it was before an amendment below changes it
	deny := func(guard, reason string) (*Outcome, error) {
		r := k.chainReceipt(rec, p, req, receipt.Decision{Verdict: receipt.Deny, Guard: guard, Reason: reason}, vote, now)
		rec.Status, rec.Guard, rec.Reason = StatusDenied, guard, reason
		return k.finish(ctx, req, rec, r, now)
	}
	var revoked bool
	if err := k.store.View(func(tx ReadTx) error {
		var err error
		revoked, err = tx.Revoked(rec.CapabilityID)
		return err
	}); err != nil {
		return nil, err
	}
	if revoked {
		return deny(GuardCapability, "capability revoked during the approval wait")
	}
	// Re-validating the capability includes its signer: an authority key
	// the kernel was restarted without no longer vouches for it.
	if rec.CapabilityIssuer != "" && !k.trustsIssuer(rec.CapabilityIssuer) {
		return deny(GuardCapability, "capability issuer "+rec.CapabilityIssuer+" is no longer a trusted authority")
	}
	// The grant must still cover this exact call under the policy in force:
	// a reload may have narrowed its tool pattern or operations.
	grant, ok := p.Match(func(id string) bool { return id == rec.GrantID }, rec.Server, rec.Tool, rec.Operation)
	if !ok {
		return deny(GuardScope, "grant "+rec.GrantID+" no longer covers this call")
	}
	// And it must still be the grant that judges it: a reload may have made
	// an earlier grant the capability holds cover the call (an operator's
	// "freeze" grant widened to tool = "*"), and a new call would be judged
	// by that one. (Records parked before capability_grants existed keep
	// only the grant above.)
	if len(rec.CapabilityGrants) > 0 {
		first, _ := p.Match(func(id string) bool { return slices.Contains(rec.CapabilityGrants, id) }, rec.Server, rec.Tool, rec.Operation)
		if first != nil && first.ID != rec.GrantID {
			return deny(GuardScope, fmt.Sprintf("under the policy in force, grant %s judges this call, not grant %s it was parked under; call again to be judged by it",
				first.ID, rec.GrantID))
		}
	}
	if now.Unix() >= rec.CapabilityExpiresAt {
		return deny(GuardCapability, "capability expired during the approval wait")
	}
	// The approvals (or the kernel's advisory vote) must still approve the
	// call under the policy in force (approved_now.go). An approved request
	// with no recorded vote (only a damaged store holds one) counts no
	// approval, and is denied rather than run.
	if guard, reason, ok := approvedNow(p, req, vote != nil && advisory(vote, k.pub.String())); !ok {
		return deny(guard, reason)
	}
	var amended map[string]any
	if tok != nil && len(tok.AmendedArguments) > 0 {
		a, err := k.checkAmendment(p, req, rec, tok.AmendedArguments)
		if err != nil {
			return deny(GuardAmendment, err.Error())
		}
		amended = a.meta
		if rec.RequestedParameterHash == "" {
			rec.RequestedParameterHash = rec.ParameterHash
		}
		rec.Arguments, rec.ParameterHash = a.args, a.hash
	}
	// Sent, and stored with the allow, as their canonical bytes, also when
	// a build before 8320525 parked the call (sent_args.go).
	rec.Arguments = canonicalArguments(rec.Arguments)
	// The stored intent met the rules in force when the call was parked; one
	// that no longer decodes is corruption, and resuming without it would
	// skip the guards that read it: deny.
	intent, err := decodeIntent(rec.Intent)
	if err != nil {
		return deny(GuardRecovery, "the stored governed intent is unreadable; the call is not run: "+err.Error())
	}
	tool, _ := p.Tool(rec.Server, rec.Tool)
	call := &ToolCall{RequestID: rec.RequestID, Server: rec.Server, Tool: rec.Tool, Operation: rec.Operation,
		Arguments: rec.Arguments, GovernedIntent: rec.Intent}
	// Guards the grant routes to a human (on_trigger = "require_approval")
	// and that this request was parked for were answered by the approver,
	// who saw them as its triggers: they do not deny the call again. Only
	// a person answers them: the kernel's own advisory vote at a deadline
	// (auto_approve_advisory) leaves them to deny as before.
	rq := &Request{Policy: p, Grant: grant, Tool: tool, Call: call, Operation: rec.Operation, Subject: rec.Subject, Intent: intent, Now: now}
	if vote != nil && vote.Approver != k.pub.String() {
		rq.HumanAnswered = req.TriggeredBy
	}
	// The rate window is not counted again on resume (the call counted
	// when it arrived), so the rate guard would see no calls and allow. A
	// call parked for being over max_calls_per_minute that no person
	// answered is still over it: like any routed guard, the kernel's own
	// advisory vote does not lift it (it ran every call an agent had
	// parked over the limit, at one moment, at the deadline).
	if limit := grant.Constraints.MaxCallsPerMinute; limit > 0 && slices.Contains(req.TriggeredBy, GuardRateLimit) &&
		!slices.Contains(rq.HumanAnswered, GuardRateLimit) {
		return deny(GuardRateLimit, fmt.Sprintf("the call was over max_calls_per_minute = %d when it arrived, and no person approved it", limit))
	}
	if d := k.pipeline.Evaluate(rq, false); d.Verdict == Deny {
		return deny(d.Guard, d.Reason)
	}
	r := k.chainReceipt(rec, p, req, receipt.Decision{Verdict: receipt.Allow}, vote, k.clock.Now())
	for key, v := range amended {
		r.Metadata[key] = v
	}
	if req.Kind != approval.KindToolCall {
		// confirm / ask: the signed answer is the output; nothing is sent.
		// Its commit reads the capability again, as an allow's does: a
		// revocation (or the expiry) that lands after the checks above
		// denies the answer.
		// And, as an allow's, only while p is in force: after a reload
		// since p was read, the call is judged again from the start.
		rec.Output, rec.Status, rec.Execution = hitlOutput(req, tok, vote), StatusAllowed, ExecutionSucceeded
		var out *Outcome
		inForce, err := k.commitAfterVoteWhileInForce(ctx, p, func() error {
			var err error
			out, err = k.finishWith(ctx, req, rec, r, now, func(fn func(Tx) error) error { return k.update(ctx, fn) })
			return err
		})
		if !inForce {
			*rec = parked
			return k.resume(ctx, req, rec, tok, vote, now)
		}
		switch {
		case errors.Is(err, errRevokedAtDecision):
			*rec = parked
			return deny(GuardCapability, "capability revoked during the approval wait")
		case errors.Is(err, errExpiredAtDecision):
			*rec = parked
			return deny(GuardCapability, "capability expired during the approval wait")
		}
		return out, err
	}
	// Everything above was judged by p: the allow commits only while p is
	// in force. After a reload since p was read, the call is judged again,
	// from the start, by the policy now in force.
	var resolved *approval.Request
	resolve := func(tx Tx) error { // the request's resolution names the allow receipt
		cur, err := tx.Approval(req.ApprovalID)
		if err != nil {
			return err
		}
		if cur.Resolution == nil {
			cur.Resolution = &approval.Resolution{Outcome: cur.Status, At: now.Unix()}
		}
		cur.Resolution.ReceiptID, cur.Resolution.Uncounted = r.ID, receiptUncounted(r)
		resolved = cur
		return tx.PutApproval(cur)
	}
	// The vote is durable: a full queue is waited out, not failed.
	inForce, err := k.commitAfterVoteWhileInForce(ctx, p, func() error { return k.commitAllow(ctx, p, rec, r, false, resolve) })
	if !inForce {
		*rec = parked
		return k.resume(ctx, req, rec, tok, vote, now)
	}
	switch {
	case errors.Is(err, errRevokedAtDecision):
		return deny(GuardCapability, "capability revoked during the approval wait")
	case errors.Is(err, errExpiredAtDecision):
		return deny(GuardCapability, "capability expired during the approval wait")
	case err != nil:
		return nil, err
	}
	*req = *resolved
	k.announce(EventApprovalResolved, req)
	return k.deliverMarked(ctx, rec)
}

// finish commits the chain's final receipt when no delivery follows (a
// deny on resume, an answered confirm / ask), with the call record and the
// request's resolution. Like commitAllow, it commits only while the call
// is still an approved call with no decision: two resumes of one call (a
// live answer and recovery after a store heal, or another replica taking
// the call over) can race, and the loser must neither add a second final
// receipt nor overwrite a call that was already decided and sent.
func (k *Kernel) finish(ctx context.Context, req *approval.Request, rec *CallRecord, r *receipt.Receipt, now time.Time) (*Outcome, error) {
	// The vote is durable: a full queue is waited out, not failed.
	return k.finishWith(ctx, req, rec, r, now, func(fn func(Tx) error) error { return k.updateAfterVote(ctx, fn) })
}

// finishWith is finish committing through commit: k.update for an answer
// committed under policyMu (commitAfterVoteWhileInForce waits out a full
// queue with the lock released).
func (k *Kernel) finishWith(ctx context.Context, req *approval.Request, rec *CallRecord, r *receipt.Receipt, now time.Time,
	commit func(func(Tx) error) error) (*Outcome, error) {
	next := *rec // rec changes only if the commit succeeds
	next.ReceiptID, next.UpdatedAt = r.ID, r.Timestamp
	countKey := firstNKey(rec.GrantID, rec.Subject)
	count := rec.Status == StatusAllowed && k.tracksFirstN(rec.GrantID)
	err := commit(func(tx Tx) error {
		switch c, err := tx.Call(rec.RequestID); {
		case err != nil:
			return err
		case c.Status != StatusDispatching || c.DecisionReceiptID != "":
			return fmt.Errorf("%w: call %s is %s", ErrConflict, rec.RequestID, c.Status)
		}
		cur, err := tx.Approval(req.ApprovalID)
		if err != nil {
			return err
		}
		if cur.Resolution == nil {
			cur.Resolution = &approval.Resolution{Outcome: cur.Status, At: now.Unix()}
		}
		res := cur.Resolution
		res.ReceiptID, res.CallStatus, res.Uncounted = r.ID, rec.Status, receiptUncounted(r)
		if rec.Status == StatusDenied {
			// The human approved; a guard refused when the call resumed. The
			// resolution names the guard, never the approver, as the decider.
			res.Reason, res.Guard = rec.Reason, rec.Guard
		}
		if rec.Status == StatusAllowed {
			// An answer allowed (confirm / ask) is the call's effect: like
			// commitAllow, it commits only while the capability is neither
			// revoked nor expired, read inside this commit.
			if err := k.capabilityLiveIn(tx, rec); err != nil {
				return err
			}
		}
		if count {
			if err := bumpCounter(tx, countKey); err != nil {
				return err
			}
		}
		tx.AppendReceipt(r)
		if err := tx.PutCall(&next); err != nil {
			return err
		}
		*req = *cur
		return tx.PutApproval(cur)
	})
	if err != nil {
		return nil, err
	}
	*rec = next
	k.announce(EventApprovalResolved, req)
	return k.completed(rec), nil
}
