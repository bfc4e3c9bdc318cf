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
	rec, err := k.endPending(ctx, k.Policy(), approvalID, k.clock.Now(), ending{
		status: approval.StatusCancelled, callStatus: StatusCancelled, verdict: receipt.Cancelled,
		reason: func(*approval.Request) string { return reason }, decidedBy: by,
		meta: map[string]any{"cancelled_by": by},
	})
	if mayHaveCommitted(err) {
		return nil, fmt.Errorf("%w: the cancel of %s may or may not be recorded: its commit failed and may have reached the disk "+
			"(read the request to learn whether it is cancelled): %w", ErrOutcomeUnknown, approvalID, err)
	}
	if err != nil {
		return nil, err
	}
	return OutcomeOf(rec), nil
}
