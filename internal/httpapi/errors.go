package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

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
)

// APIError is what crosses the HTTP boundary.
type APIError struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

func apiErr(status int, code, msg string) *APIError {
	return &APIError{Status: status, Code: code, Message: msg}
}

// classify maps domain errors to API errors with errors.Is, never by text.
// Anything unrecognized is a 503: the kernel failed, so nothing was allowed.
func classify(err error) *APIError {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, kernel.ErrBadProof), errors.Is(err, kernel.ErrStaleProof),
		errors.Is(err, kernel.ErrCapabilityInvalid):
		return apiErr(http.StatusUnauthorized, CodeUnauthorized, err.Error())
	case errors.Is(err, kernel.ErrBadCall), errors.Is(err, canon.ErrInvalid),
		errors.Is(err, canon.ErrDuplicateKey), errors.Is(err, canon.ErrUnsafeInteger),
		errors.Is(err, canon.ErrTooDeep), errors.Is(err, canon.ErrNumberRange), errors.Is(err, canon.ErrTrailingData):
		return apiErr(http.StatusBadRequest, CodeBadRequest, err.Error())
	case errors.Is(err, kernel.ErrRequestUsed), errors.Is(err, kernel.ErrConflict):
		return apiErr(http.StatusConflict, CodeConflict, err.Error())
	case errors.Is(err, kernel.ErrNotFound):
		return apiErr(http.StatusNotFound, CodeNotFound, err.Error())
	default:
		return apiErr(http.StatusServiceUnavailable, CodeUnavailable, err.Error())
	}
}

func writeErr(w http.ResponseWriter, err error) {
	ae := classify(err)
	writeJSON(w, ae.Status, ae)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
