package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A cancel racing the approver's vote, and a cancel arriving while the
// approved call is being delivered, with a crash (kill -9) at each store
// update that follows: the cancel, the vote, the approved call's allow
// decision, its settle. Either the cancel won — the request and the call
// are cancelled, a cancelled receipt says so, the tool never runs (not
// even by recovery) — or the vote did — no cancelled receipt, the tool
// ran at most once. Never both, and what each caller was answered agrees
// with the log after the restart.

// cancelRace is one run's answers.
type cancelRace struct {
	cancelled bool // the cancel was made (the dispatch it waits for may never come)
	cancelOut *kernel.Outcome
	cancelErr error
	vote      *kernel.RespondResult
	voteErr   error
}

// checkCancelRace judges the durable end of the parked call c (approval
// id) after the restart to k, against what the cancel and the vote were
// answered.
func checkCancelRace(t *testing.T, r *crashRig, k *kernel.Kernel, c *kernel.ToolCall, approvalID string, got cancelRace) {
	t.Helper()
	rec := settledEventually(t, r, k, c.RequestID)
	req, err := k.Approval(approvalID)
	if err != nil || rec == nil {
		t.Fatalf("after the restart: request %v, call %+v", err, rec)
	}
	l := readBatchLedger(t, r, "", nil)
	var cancelled []*receipt.Receipt
	for _, rc := range l.byRequest[c.RequestID] {
		if rc.Decision.Verdict == receipt.Cancelled {
			cancelled = append(cancelled, rc)
		}
	}
	ran := len(r.tool.deliveries(c.RequestID))
	isCancelled := rec.Status == kernel.StatusCancelled
	t.Logf("cancel: %v %v; vote: %+v %v; end: call %s/%s, request %s, %d cancelled receipts, ran %d",
		got.cancelOut != nil, got.cancelErr, got.vote, got.voteErr, rec.Status, rec.Execution, req.Status, len(cancelled), ran)
	switch {
	case ran > 1:
		t.Errorf("the at_most_once refund ran %d times", ran)
	case len(cancelled) > 1:
		t.Errorf("%d cancelled receipts", len(cancelled))
	case isCancelled != (req.Status == approval.StatusCancelled) || isCancelled != (len(cancelled) == 1):
		t.Errorf("call %s, request %s, %d cancelled receipts: they disagree", rec.Status, req.Status, len(cancelled))
	case isCancelled && ran != 0:
		t.Errorf("the request is cancelled, yet the tool ran")
	case isCancelled && (rec.ReceiptID != cancelled[0].ID || req.Resolution == nil || req.Resolution.ReceiptID != cancelled[0].ID):
		t.Errorf("cancelled, but the call names receipt %s and the request %+v, not the cancelled receipt %s",
			rec.ReceiptID, req.Resolution, cancelled[0].ID)
	case isCancelled && cancelled[0].Metadata["previous_receipt_id"] != req.ReceiptID:
		t.Errorf("the cancelled receipt chains to %v, not the request's incomplete receipt %q", cancelled[0].Metadata["previous_receipt_id"], req.ReceiptID)
	}
	// The canceller's answer.
	switch {
	case !got.cancelled:
	case got.cancelErr == nil:
		if !isCancelled || got.cancelOut.Status != kernel.StatusCancelled || got.cancelOut.ReceiptID != rec.ReceiptID {
			t.Errorf("the cancel was answered %+v; the call ended %s (receipt %s) and ran %d time(s)", got.cancelOut, rec.Status, rec.ReceiptID, ran)
		}
	case errors.Is(got.cancelErr, approval.ErrNotPending):
		// The vote won (or the crash let the deadline end it): no cancel.
		if isCancelled {
			t.Errorf("the cancel was refused (%v), yet the request is cancelled", got.cancelErr)
		}
	case errors.Is(got.cancelErr, kernel.ErrOutcomeUnknown):
		// May or may not have committed: either end is truthful.
	case errors.Is(got.cancelErr, kernel.ErrUnavailable):
		// "unavailable": nothing was written.
		if isCancelled {
			t.Errorf("the cancel was answered %q (nothing written), yet the request is cancelled by it", got.cancelErr)
		}
	default:
		t.Errorf("cancel answered %v", got.cancelErr)
	}
	// The approver's answer.
	switch {
	case got.voteErr == nil:
		if got.vote.Outcome == approval.StatusApproved && isCancelled {
			t.Errorf("the vote was answered approved (%+v), yet the request is cancelled", got.vote.Call)
		}
		if got.vote.Call != nil && got.vote.Call.Status == kernel.StatusAllowed && ran != 1 {
			t.Errorf("the vote was answered that the call ran, but it ran %d times", ran)
		}
	case errors.Is(got.voteErr, kernel.ErrVoteRecorded), errors.Is(got.voteErr, kernel.ErrVoteUncertain):
		if errors.Is(got.voteErr, kernel.ErrVoteRecorded) && isCancelled {
			t.Errorf("the vote was answered recorded (%v), yet the request is cancelled", got.voteErr)
		}
	case errors.Is(got.voteErr, approval.ErrNotPending), errors.Is(got.voteErr, kernel.ErrConflict):
		if !isCancelled && req.Status != approval.StatusDenied && req.Status != approval.StatusExpired {
			t.Errorf("the vote was refused (%v), yet the request ended %s", got.voteErr, req.Status)
		}
	case errors.Is(got.voteErr, kernel.ErrUnavailable):
		for _, v := range req.Votes {
			if v.Approver == financeLead.Public().String() {
				t.Errorf("the vote was answered %q (nothing written), yet it is recorded", got.voteErr)
			}
		}
	default:
		t.Errorf("vote answered %v", got.voteErr)
	}
}

// parkRefund parks a refund on r's kernel (no standing approval exists)
// and returns the call and its approval id; the crash counter then starts
// from 0.
func parkRefund(t *testing.T, r *crashRig) (*kernel.ToolCall, string) {
	t.Helper()
	c := r.w.Call(t, "issue_refund", refundArgs(500), "")
	out, err := r.w.Kernel.Submit(context.Background(), c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	r.cs.n.Store(0)
	return c, out.ApprovalRequestID
}

// The cancel and the vote in each order, and let go together.
func TestCrashAtEachCommitOfACancelRacingTheVote(t *testing.T) {
	const updates = 4 // the cancel, the vote; if the vote won: the allow decision, the settle
	for _, order := range []string{"cancel-first", "vote-first", "together", "together", "together"} {
		for crashAt := int64(1); crashAt <= updates+1; crashAt++ {
			for _, durable := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/update%d/durable=%v", order, crashAt, durable), func(t *testing.T) {
					r, meet := newMeetCrashRig(t, "deny")
					c, id := parkRefund(t, r)
					tok := r.w.Token(t, id, financeLead, approval.DecisionApproved, nil)
					r.cs.crashAt, r.cs.durable = crashAt, durable
					ctx := context.Background()
					var got cancelRace
					cancel := func() {
						got.cancelOut, got.cancelErr = r.w.Kernel.Cancel(ctx, id, "customer withdrew", kernel.CancelledByAdmin)
						got.cancelled = true
					}
					vote := func() { got.vote, got.voteErr = r.w.Kernel.Respond(ctx, id, tok, "", "") }
					switch order {
					case "cancel-first":
						cancel()
						vote()
					case "vote-first":
						vote()
						cancel()
					default:
						meet.arm(2)
						var wg sync.WaitGroup
						wg.Add(2)
						go func() { defer wg.Done(); cancel() }()
						go func() { defer wg.Done(); vote() }()
						wg.Wait()
					}
					r.w.Kernel.WaitSettles()
					r.clock.Advance(time.Second)
					k := r.restart(t)
					checkCancelRace(t, r, k, c, id, got)
				})
			}
		}
	}
}

// The vote has committed and the approved refund is being delivered when
// the cancel arrives; a crash lands at each update (the vote, the allow
// decision, the cancel, the settle).
func TestCrashAtEachCommitOfACancelDuringTheDispatch(t *testing.T) {
	const updates = 4
	for crashAt := int64(1); crashAt <= updates+1; crashAt++ {
		for _, durable := range []bool{false, true} {
			t.Run(fmt.Sprintf("update%d/durable=%v", crashAt, durable), func(t *testing.T) {
				var got cancelRace
				var id string
				var once sync.Once
				var r *crashRig
				r, _ = newHookedMeetCrashRig(t, "deny", func(kernel.DispatchRequest) {
					once.Do(func() {
						got.cancelOut, got.cancelErr = r.w.Kernel.Cancel(context.Background(), id, "customer withdrew", kernel.CancelledByAdmin)
						got.cancelled = true
					})
				})
				c, approvalID := parkRefund(t, r)
				id = approvalID
				tok := r.w.Token(t, id, financeLead, approval.DecisionApproved, nil)
				r.cs.crashAt, r.cs.durable = crashAt, durable
				got.vote, got.voteErr = r.w.Kernel.Respond(context.Background(), id, tok, "", "")
				r.w.Kernel.WaitSettles()
				r.clock.Advance(time.Second)
				k := r.restart(t)
				checkCancelRace(t, r, k, c, id, got)
			})
		}
	}
}
