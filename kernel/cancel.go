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
// A cancel whose commit failed in a way that may still have reached the
// disk is answered ErrOutcomeUnknown, never ErrUnavailable alone ("nothing
// was written"): the request may be cancelled, or still pending and
// about to be approved and run. Reading the request tells which; a cancel
// sent again is refused (ErrNotPending) if the first was recorded.
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
	e := ending{
		status: approval.StatusCancelled, callStatus: StatusCancelled, verdict: receipt.Cancelled,
		reason: func(*approval.Request) string { return reason }, decidedBy: by,
		meta: map[string]any{"cancelled_by": by},
	}
	if by == CancelledByAgent {
		e.callCheck = k.agentMayCancel
	}
	rec, err := k.endPending(ctx, k.Policy(), approvalID, k.clock.Now(), e)
	if mayHaveCommitted(err) {
		return nil, fmt.Errorf("%w: the cancel of %s may or may not be recorded: its commit failed and may have reached the disk "+
			"(read the request to learn whether it is cancelled): %w", ErrOutcomeUnknown, approvalID, err)
	}
	if err != nil {
		return nil, err
	}
	return OutcomeOf(rec), nil
}

// agentMayCancel refuses an agent's cancel once the capability its call
// was parked under is no longer live: revoked (its key may be in other
// hands), expired, or signed by an authority key chiod no longer trusts.
// Such a key acts no more; the call is denied if it is approved, and an
// operator can still cancel it. It reads the revocation inside the
// cancel's own transaction, so a revocation that commits first wins.
func (k *Kernel) agentMayCancel(tx Tx, rec *CallRecord) error {
	const after = "its agent can no longer cancel its calls (an operator can: chio approval cancel)"
	if rec.CapabilityIssuer != "" && !k.trustsIssuer(rec.CapabilityIssuer) {
		return fmt.Errorf("%w: capability %s: its issuer %s is no longer a trusted authority: %s", ErrCapabilityInvalid, rec.CapabilityID, rec.CapabilityIssuer, after)
	}
	switch revoked, err := tx.Revoked(rec.CapabilityID); {
	case err != nil:
		return err
	case revoked:
		return fmt.Errorf("%w: capability %s is revoked: %s", ErrCapabilityRevoked, rec.CapabilityID, after)
	}
	if rec.CapabilityExpiresAt != 0 && k.clock.Now().Unix() >= rec.CapabilityExpiresAt {
		return fmt.Errorf("%w: capability %s expired at %d: %s", ErrCapabilityExpired, rec.CapabilityID, rec.CapabilityExpiresAt, after)
	}
	return nil
}
