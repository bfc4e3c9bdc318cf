package kernel

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/receipt"
)

// Who asked to cancel (receipt metadata `cancelled_by`).
const (
	CancelledByAdmin = "admin" // an operator, with the admin token
	CancelledByAgent = "agent" // the parked call's own agent, by its key
)

// Cancel ends a parked call before a human decided it: the request becomes
// cancelled, the call cancelled, and a `cancelled` receipt is chained to
// the incomplete one (previous_receipt_id). Only a pending request can be
// cancelled (ErrNotPending otherwise): a decision already taken stands.
func (k *Kernel) Cancel(ctx context.Context, approvalID, reason, by string) (*Outcome, error) {
	ctx = context.WithoutCancel(ctx)
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return nil, fmt.Errorf("%w: a cancellation needs a reason", ErrBadCall)
	case len(reason) > MaxCancelReasonLen || !utf8.ValidString(reason):
		return nil, fmt.Errorf("%w: reason must be valid UTF-8 of at most %d bytes", ErrBadCall, MaxCancelReasonLen)
	case by != CancelledByAdmin && by != CancelledByAgent:
		return nil, fmt.Errorf("%w: unknown canceller %q", ErrBadCall, by)
	}
	now := k.clock.Now()
	p := k.Policy()
	var final *approval.Request
	var rec *CallRecord
	err := k.store.Update(ctx, func(tx Tx) error {
		req, err := tx.Approval(approvalID)
		if err != nil {
			return err
		}
		if req.Status != approval.StatusPending {
			return fmt.Errorf("%w: request is %s", approval.ErrNotPending, req.Status)
		}
		if rec, err = tx.Call(req.RequestID); err != nil {
			return err
		}
		r := k.chainReceipt(rec, p, req, receipt.Decision{Verdict: receipt.Cancelled, Reason: reason}, nil, now)
		r.Metadata["cancelled_by"] = by
		req.Status = approval.StatusCancelled
		req.Resolution = &approval.Resolution{Outcome: approval.StatusCancelled, Reason: reason, At: now.Unix(),
			ReceiptID: r.ID, CallStatus: StatusCancelled, DecidedBy: by}
		rec.Status, rec.Reason, rec.ReceiptID, rec.UpdatedAt = StatusCancelled, reason, r.ID, now.UnixMilli()
		tx.AppendReceipt(r)
		if err := tx.PutCall(rec); err != nil {
			return err
		}
		final = req
		return tx.PutApproval(req)
	})
	if err != nil {
		return nil, err
	}
	k.stopTimer(approvalID)
	k.announce(EventApprovalResolved, final)
	return k.completed(rec), nil
}
