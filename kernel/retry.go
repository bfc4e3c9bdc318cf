package kernel

// Idempotent retries: a request_id already decided is answered from its
// stored record, and one reused for a different call is refused.

import (
	"errors"
	"fmt"
)

// replay answers a duplicate request_id from the stored record. firstErr
// is how this kernel's first Submit of the id ended (nil if unknown, still
// running, or successful): when it was refused without being possibly
// decided and left no record, the duplicate gets the same refusal — two
// answers to one call never contradict each other.
func (k *Kernel) replay(call *ToolCall, vc verifiedCap, paramHash string, firstErr error) (*Outcome, error) {
	ans := k.answered(call.RequestID) // before the store read (settling.go)
	rec, err := k.storedCall(call.RequestID)
	if errors.Is(err, ErrNotFound) && firstErr != nil && !errors.Is(firstErr, ErrOutcomeUnknown) && !errors.Is(firstErr, ErrRequestUsed) {
		return nil, firstErr
	}
	if err != nil {
		// The first may have ended in a commit reported failed that is
		// durable anyway (recovery then runs it): never "nothing happened".
		return nil, fmt.Errorf("%w: duplicate request_id whose first call left no readable record (%v); retry it later with the same id",
			ErrOutcomeUnknown, err)
	}
	return k.sameCall(settledView(rec, ans), vc, paramHash)
}

// sameCall returns a stored outcome to an idempotent retry, and refuses a
// request_id reused for a different call: other parameters, or another
// agent key. The capability may differ: an agent replaying a step after
// its capability was renewed is told what became of the call, never
// invited to make it again under a new id. Nothing runs on a replay.
func (k *Kernel) sameCall(rec *CallRecord, vc verifiedCap, paramHash string) (*Outcome, error) {
	sent := rec.ParameterHash // what the agent sent, unless an approver amended it
	if rec.RequestedParameterHash != "" {
		sent = rec.RequestedParameterHash
	}
	if sent != paramHash || rec.Subject != vc.subjectText {
		return nil, ErrRequestUsed
	}
	out := OutcomeOf(rec)
	// A retry of a parked call gets the same answer as the first attempt.
	if rec.Status == StatusPendingApproval && rec.ApprovalID != "" {
		if req, err := k.Approval(rec.ApprovalID); err == nil {
			out.Deadline, out.Summary = req.ExpiresAt, req.Summary
		}
	}
	return out, nil
}

// OutcomeOf renders a stored call record as an outcome.
func OutcomeOf(rec *CallRecord) *Outcome {
	return &Outcome{
		Status: rec.Status, RequestID: rec.RequestID, ReceiptID: rec.ReceiptID, Output: rec.Output,
		ToolError: rec.ToolError, Reason: rec.Reason, Guard: rec.Guard, ApprovalRequestID: rec.ApprovalID,
		Execution: rec.Execution,
	}
}
