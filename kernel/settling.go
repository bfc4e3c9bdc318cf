package kernel

import (
	"context"
	"log/slog"
)

// Answering before the settle commit.
//
// A call's decision is durable before its tool sees it (deliver.go). What
// the settle commit adds for a SUCCESSFUL at_least_once call is bookkeeping
// that a crash can reproduce: recovery re-sends the call with the same
// Idempotency-Key and the tool server, which must deduplicate on it,
// answers again. No receipt rides that commit (only failures get one), so
// the caller may be answered first. Everything else waits for its commit:
//
//   - at_most_once calls: after a crash recovery must record "unknown", and
//     the agent must not have been told "succeeded";
//   - failures: their incomplete receipt is acknowledged with the answer;
//   - approved calls: the approver's answer carries the approval's
//     resolution, written by the same commit.
//
// While the commit runs, the settled record is kept in memory and every
// read of the call on this kernel (an idempotent retry, GET /v1/calls/{id},
// an await) sees it, so an answer is never followed by "dispatching" (nor
// after a failed commit, until recovery records the kept answer). The
// call stays in `delivering` until the commit is done, so recovery (after
// a store heal) cannot send it again meanwhile; Close waits for these
// commits (at most SettleDrainTimeout).

// answersEarly says whether a settled call may be answered before its
// settle commit (see above).
func answersEarly(s settlement) bool {
	return s.receipt == nil && s.rec.Delivery == AtLeastOnce && s.rec.ApprovalID == "" &&
		s.rec.Execution == ExecutionSucceeded
}

// settleInBackground starts committing s so that its caller can be
// answered now, and reports whether it did: once Close has begun it does
// not (the caller commits first, as for any other outcome), so Close's
// wait covers every background commit. The caller holds the call's
// `delivering` mark; it is released here, once the outcome is durable or
// handed to recovery.
func (k *Kernel) settleInBackground(s settlement) bool {
	k.settleMu.RLock()
	defer k.settleMu.RUnlock()
	if k.stopping() {
		return false
	}
	k.settles.Add(1) // before Close's Wait: Close takes settleMu to stop
	id := s.rec.RequestID
	snapshot := *s.rec // read-only from here: the commit and readers (answered) share it
	s.rec = &snapshot
	k.settling.Store(id, &snapshot)
	go func() {
		defer k.settles.Done()
		defer k.delivering.Delete(id)
		// A full queue is waited out inside commitSettlement; anything else
		// is recovery's to finish.
		if err := k.commitSettlement(context.Background(), s); err != nil {
			// The settled record stays visible (answered) until recovery
			// commits it: the agent was told this outcome.
			k.unsettled.Store(id, s)
			slog.Error("a settled call's record could not be committed; recovery records it when the store heals or chiod restarts",
				"request_id", id, "err", err)
			return
		}
		k.settling.Delete(id)
		k.events.publish(Event{Type: EventCallCompleted, Call: OutcomeOf(&snapshot)})
	}()
	return true
}

// answered returns the settled record a call's caller was answered with
// while its settle commit runs on this kernel (nil when none is running).
//
// Take it BEFORE reading the stored record, then combine the two with
// settledView. The other order has a window: the store is read while the
// commit runs ("dispatching"), the commit ends and its entry is removed,
// and the check then finds nothing, so a caller already answered
// "succeeded" reads "dispatching". In this order, an entry missing at the
// check means the settle had not started (and its caller had not been
// answered) or its commit had ended, which the later store read then sees.
func (k *Kernel) answered(requestID string) *CallRecord {
	if v, ok := k.settling.Load(requestID); ok {
		return v.(*CallRecord)
	}
	return nil
}

// settledView is the record to show for a call: rec, read from the store
// after ans was taken (answered), unless rec is still dispatching the
// decision that ans settled.
func settledView(rec, ans *CallRecord) *CallRecord {
	if rec == nil || ans == nil || rec.Status != StatusDispatching || ans.DecisionReceiptID != rec.DecisionReceiptID {
		return rec
	}
	c := *ans
	return &c
}
