package kernel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// ending is how a pending request ends without a call running: a deadline
// that denies, a cancellation, a policy that leaves nobody to decide.
type ending struct {
	status     string // the request's new status: expired | denied | cancelled
	callStatus string // the parked call's: StatusDenied | StatusCancelled
	verdict    string // the receipt's: receipt.Deny | receipt.Cancelled
	guard      string // deny receipts only
	reason     func(req *approval.Request) string
	// check, if set, replaces the pending check (it must refuse a request
	// that is not pending).
	check func(req *approval.Request) error
	// callCheck, if set, runs on the parked call inside the same
	// transaction, before anything is written (an agent's cancel: its
	// capability must still be live).
	callCheck func(tx Tx, rec *CallRecord) error
	decidedBy string         // who asked for the end, when someone did
	meta      map[string]any // extra receipt metadata
	// decider, if set, returns the recorded vote that decided the end
	// (checked by check): the receipt names it and every vote, as a
	// vote's own deny does (chainReceipt), so the export carries the
	// signed votes and an auditor checks them.
	decider func(req *approval.Request) *approval.Vote
	// at, if set, returns the request as the policy decides it (checked
	// by check): moved to the tier it is passed over to (skip_tiers.go),
	// which the ended request then says, as the views and its receipt do.
	at func(req *approval.Request) *approval.Request
}

// endPending ends pending request id and its parked call in ONE durable
// commit, with a receipt chained to the incomplete one; then its deadline
// is disarmed and subscribers learn both ends. A request that is no longer
// pending is left as it is (approval.ErrNotPending).
func (k *Kernel) endPending(ctx context.Context, p *policy.Policy, id string, now time.Time, e ending) (*CallRecord, error) {
	var final *approval.Request
	var rec *CallRecord
	err := k.update(ctx, func(tx Tx) error {
		req, err := tx.Approval(id)
		if err != nil {
			return err
		}
		if e.check != nil {
			if err := e.check(req); err != nil {
				return err
			}
		} else if req.Status != approval.StatusPending {
			return fmt.Errorf("%w: request is %s", approval.ErrNotPending, req.Status)
		}
		if rec, err = tx.Call(req.RequestID); err != nil {
			return err
		}
		if e.callCheck != nil {
			if err := e.callCheck(tx, rec); err != nil {
				return err
			}
		}
		skipped := len(req.SkippedTiers)
		if e.at != nil {
			req = e.at(req)
		}
		reason := e.reason(req)
		var vote *approval.Vote
		if e.decider != nil {
			vote = e.decider(req)
		}
		r := k.chainReceipt(rec, p, req, receipt.Decision{Verdict: e.verdict, Guard: e.guard, Reason: reason}, vote, now)
		for key, v := range e.meta {
			r.Metadata[key] = v
		}
		if len(req.SkippedTiers) > skipped {
			r.Metadata["skipped_tiers"] = req.SkippedTiers // passed over as it ended (at)
		}
		req.Status = e.status
		req.Resolution = &approval.Resolution{Outcome: e.status, Reason: reason, At: now.Unix(), ReceiptID: r.ID,
			Guard: e.guard, CallStatus: e.callStatus, DecidedBy: e.decidedBy, Uncounted: receiptUncounted(r)}
		if vote != nil {
			// Who decided, as the receipt names them (GET /v1/calls/{id}
			// reads the token as the deciding vote).
			req.Resolution.TokenID, req.Resolution.DecidedBy = vote.TokenID, decidedBy(vote)
		}
		rec.Status, rec.Guard, rec.Reason, rec.ReceiptID, rec.UpdatedAt = e.callStatus, e.guard, reason, r.ID, now.UnixMilli()
		tx.AppendReceipt(r)
		if err := tx.PutCall(rec); err != nil {
			return err
		}
		final = req
		return tx.PutApproval(req)
	})
	switch {
	case err != nil && mayHaveCommitted(err) && final != nil:
		// The ending may be durable with its answer lost: it is told by
		// whichever path first reads it recorded (lost_endings.go).
		k.keepLostEnding(id, final.Resolution.ReceiptID)
	case errors.Is(err, approval.ErrNotPending):
		// The store moved on: a lost ending may be why.
		k.tellLostEndingOn(id)
	}
	if err != nil {
		return nil, err
	}
	k.stopTimer(id)
	k.announce(EventApprovalResolved, final)
	k.completed(rec)
	return rec, nil
}
