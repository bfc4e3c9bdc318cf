package chio

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinels for conditions callers branch on (errors.Is). An [*APIError]
// matches the sentinel of its code.
var (
	// ErrBadRequest: the input was refused (by this package or by chiod, 400).
	ErrBadRequest = errors.New("chio: bad request")
	// ErrUnauthorized: the key, capability, proof or bearer was not accepted.
	ErrUnauthorized = errors.New("chio: unauthorized")
	// ErrNotFound: no such call or approval (401 answers for unknown ids
	// seen through a Chio-Proof, so that ids cannot be probed).
	ErrNotFound = errors.New("chio: not found")
	// ErrConflict: a request id reused for a different call, a token
	// already presented, or an approval no longer pending.
	ErrConflict = errors.New("chio: conflict")
	// ErrApprovalRejected: chiod refused a presented approval token.
	ErrApprovalRejected = errors.New("chio: approval token rejected")
	// ErrUnavailable: chiod could not decide (503); nothing was allowed.
	ErrUnavailable = errors.New("chio: unavailable")

	// ErrTimedOut: the wait ended before a decision — the context's
	// deadline passed, or the approval's own deadline denied a confirm/ask.
	ErrTimedOut = errors.New("chio: timed out waiting for a human")
	// ErrDeclined: a human denied an Ask.
	ErrDeclined = errors.New("chio: declined by a human")
	// ErrDenied: a policy guard (not a human) denied a Confirm or Ask.
	ErrDenied = errors.New("chio: denied by policy")
)

// APIError is chiod's error envelope ({"error": code, "message": text}).
type APIError struct {
	Status  int    // HTTP status
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("chio: %s (%d): %s", e.Code, e.Status, e.Message)
}

// Is matches the sentinel for e's code, falling back on the HTTP status
// when the body was not chiod's envelope (a proxy's error page).
func (e *APIError) Is(target error) bool {
	switch e.Code {
	case "bad_request":
		return target == ErrBadRequest
	case "unauthorized":
		return target == ErrUnauthorized
	case "not_found":
		return target == ErrNotFound
	case "conflict", "replay_detected":
		return target == ErrConflict
	case "approval_rejected":
		return target == ErrApprovalRejected
	case "unavailable":
		return target == ErrUnavailable
	}
	return target == ErrUnavailable && e.Status >= 500
}

// retryable reports whether asking again may give a different answer:
// chiod restarting, overloaded or behind a proxy that failed.
func (e *APIError) retryable() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}
