package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/kernel"
)

// Error codes of SPEC §6; they are the stable contract, messages are not.
const (
	CodeBadRequest       = "bad_request"
	CodeUnauthorized     = "unauthorized"
	CodeApprovalRejected = "approval_rejected"
	CodeNotFound         = "not_found"
	CodeConflict         = "conflict"
	CodeReplayDetected   = "replay_detected"
	CodeUnavailable      = "unavailable"
	// CodeOutcomeUnknown (500): the call's allow decision is durable and it
	// may have run, but its outcome is not recorded yet: retry under the
	// same request id, or await it. Never "unavailable" (nothing allowed).
	CodeOutcomeUnknown = "outcome_unknown"
	// CodeVoteRecorded (500): the approver's vote IS durable (counted, the
	// token spent, the request approved), but a step after it failed (the
	// approved call is not finished yet; recovery finishes it). Not
	// "unavailable": voting again is pointless (the token is a replay) and
	// a second approver need not be asked.
	CodeVoteRecorded = "vote_recorded"
	// CodeVoteUncertain (503): the vote's own commit failed in a way that
	// may still have reached the disk (kernel.ErrVoteUncertain): it may or
	// may not be recorded. Not "unavailable" (nothing allowed): the vote
	// may have approved, and run, the call. Presenting the same token
	// again settles it (a recorded vote is refused as a replay). The
	// status stays 503 so that clients that do not know the code back off
	// and, reading an unknown 5xx, take the outcome as unknown.
	CodeVoteUncertain = "vote_uncertain"
)

// APIError is what crosses the HTTP boundary.
type APIError struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	// RetryAfter, when set, is sent as Retry-After: the request was
	// refused a share that frees up as other requests end.
	RetryAfter time.Duration `json:"-"`
	// cause is the store error behind a 503 that the client is not told
	// (storeerr.go): writeErr logs it.
	cause error
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

func apiErr(status int, code, msg string) *APIError {
	return &APIError{Status: status, Code: code, Message: msg}
}

// retryLater is a request refused a share that frees up as other requests
// end: nothing changed, and it may be sent again after the given time.
func retryLater(status int, msg string, after time.Duration) *APIError {
	e := apiErr(status, CodeUnavailable, msg)
	e.RetryAfter = after
	return e
}

// classify maps domain errors to API errors with errors.Is, never by text.
// Anything unrecognized is a 503: the kernel failed, so nothing was allowed
// (a failure after a durable vote is kernel.ErrVoteRecorded, and one at a
// vote's commit kernel.ErrVoteUncertain, never that).
func classify(err error) *APIError {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return ae
	// First: a vote that committed is recorded, whatever failed after it
	// (its message also says when the approved call may have run).
	case errors.Is(err, kernel.ErrVoteRecorded):
		return answerWithoutStoreWords(http.StatusInternalServerError, CodeVoteRecorded, err)
	// A vote that may have committed is never "unavailable" (its store
	// error matches kernel.ErrUnavailable, and the default would say so).
	case errors.Is(err, kernel.ErrVoteUncertain):
		return answerWithoutStoreWords(http.StatusServiceUnavailable, CodeVoteUncertain, err)
	// Then: the call may have run, whatever store error (a conflict, a
	// missing row) the failure also carries.
	case errors.Is(err, kernel.ErrOutcomeUnknown):
		return answerWithoutStoreWords(http.StatusInternalServerError, CodeOutcomeUnknown, err)
	// Approval sentinels come first: the kernel wraps strict-JSON failures
	// of a token in ErrMalformedToken, and that is a rejected credential.
	case errors.Is(err, approval.ErrReplay), errors.Is(err, approval.ErrDuplicateVote):
		return apiErr(http.StatusConflict, CodeReplayDetected, err.Error())
	case errors.Is(err, approval.ErrMalformedBatch):
		// The body is not a batch token at all: the client's request is wrong.
		return apiErr(http.StatusBadRequest, CodeBadRequest, err.Error())
	case errors.Is(err, approval.ErrNotPending):
		return apiErr(http.StatusConflict, CodeConflict, err.Error())
	case isApprovalRejection(err):
		return apiErr(http.StatusForbidden, CodeApprovalRejected, err.Error())
	// The agent's share of the calls chiod runs at once is taken: nothing
	// was decided, and the call may be sent again once one has ended.
	case errors.Is(err, kernel.ErrTooManyCalls):
		return retryLater(http.StatusTooManyRequests, err.Error(), CallRetryAfter)
	case errors.Is(err, kernel.ErrBadProof), errors.Is(err, kernel.ErrStaleProof),
		errors.Is(err, kernel.ErrCapabilityInvalid), errors.Is(err, kernel.ErrCapabilityRevoked),
		errors.Is(err, kernel.ErrCapabilityExpired):
		return apiErr(http.StatusUnauthorized, CodeUnauthorized, err.Error())
	case errors.Is(err, kernel.ErrBadCall), errors.Is(err, canon.ErrInvalid),
		errors.Is(err, canon.ErrDuplicateKey), errors.Is(err, canon.ErrUnsafeInteger),
		errors.Is(err, canon.ErrTooDeep), errors.Is(err, canon.ErrNumberRange), errors.Is(err, canon.ErrTrailingData),
		errors.Is(err, canon.ErrInexact):
		return apiErr(http.StatusBadRequest, CodeBadRequest, err.Error())
	case errors.Is(err, kernel.ErrRequestUsed), errors.Is(err, kernel.ErrConflict), errors.Is(err, kernel.ErrTooManyBatches):
		return apiErr(http.StatusConflict, CodeConflict, err.Error())
	case errors.Is(err, kernel.ErrNotFound):
		return apiErr(http.StatusNotFound, CodeNotFound, err.Error())
	// The store's own words are never served (storeerr.go).
	case errors.Is(err, kernel.ErrUnavailable):
		return storeUnavailable(err)
	default:
		return apiErr(http.StatusServiceUnavailable, CodeUnavailable, err.Error())
	}
}

// approvalRejections are the reasons a presented approval or batch token
// does not count (403 approval_rejected). A window that is over is like an
// expired token: a real credential that is not valid now.
var approvalRejections = []error{
	approval.ErrMalformedToken, approval.ErrWrongRequest, approval.ErrWrongIntent,
	approval.ErrWrongSubject, approval.ErrUntrustedSigner, approval.ErrNoApprovers,
	approval.ErrSelfApproval, approval.ErrNotYetValid, approval.ErrTokenExpired,
	approval.ErrLifetimeTooLong, approval.ErrBadSignature, approval.ErrOutcomeMismatch,
	approval.ErrRequestExpired, approval.ErrBatchWindow, approval.ErrAmendmentRefused,
	approval.ErrWrongAudience,
}

func isApprovalRejection(err error) bool {
	for _, s := range approvalRejections {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// notFoundAs names what was not found, with its id ("approval request
// ar-… not found"): a bare "not found" does not say which of a script's
// ids was wrong. Other errors pass through.
func notFoundAs(err error, what, id string) error {
	if errors.Is(err, kernel.ErrNotFound) {
		return apiErr(http.StatusNotFound, CodeNotFound, fmt.Sprintf("%s %q not found", what, clipID(id)))
	}
	return err
}

// clipID keeps an id echoed in a message short: it is the client's input.
func clipID(id string) string {
	if len(id) > MaxIDLen {
		return id[:MaxIDLen] + "…"
	}
	return id
}

func writeErr(w http.ResponseWriter, err error) {
	ae := classify(err)
	logCause(ae)
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(ae.RetryAfter/time.Second)))
	}
	writeJSON(w, ae.Status, ae)
}

// writeJSON writes one whole answer under the write deadline (boundWrite).
// HTML escaping is off: answers embed bytes that must arrive as the kernel
// holds them (a request's arguments and intent, which the tool receives and
// approvers are shown; a tool's output), and encoding/json would rewrite
// '<', '>' and '&' inside them as \u003c, \u003e and \u0026. The answers
// are application/json, never HTML. The same holds for answers that embed
// stored signed bytes (receipts, checkpoints): the leaf hash and an
// auditor's byte-for-byte checks are over those bytes.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	boundWrite(w)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
