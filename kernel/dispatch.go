package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DispatchRequest is what a tool server receives for an allowed call.
// RequestID doubles as the idempotency key: a server that sees the same
// RequestID twice must not perform the effect twice (transports send it as
// the Idempotency-Key header or its protocol's equivalent).
type DispatchRequest struct {
	RequestID string          `json:"request_id"`
	Server    string          `json:"-"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"` // exactly the canonical bytes parameter_hash covers
	// Attempt counts deliveries of this request id, from 1. A transport
	// may pass it on (tool servers can log it); it never changes the key.
	Attempt int `json:"-"`
}

// DispatchResult is the tool's answer. A tool-level failure (the tool ran
// and reported an error) is ToolError, recorded on the call and in an
// outcome receipt; Output is the tool's JSON output (null when absent).
type DispatchResult struct {
	Output    json.RawMessage
	ToolError string
}

// Dispatcher delivers allowed calls to tool servers. It is implemented
// outside the kernel (internal/dispatch) so the kernel imports no transport.
//
// Error contract: a Dispatcher reports a failed delivery as a
// *DeliveryError saying what is known about it. Any other error is treated
// as permanent with the delivery unknown (the tool may have seen the call).
// A tool that ran and failed is not an error: it is DispatchResult.ToolError.
// The kernel owns retries (backoff, deadline, delivery semantics); a
// Dispatcher makes exactly one attempt per call.
type Dispatcher interface {
	Dispatch(ctx context.Context, req DispatchRequest) (DispatchResult, error)
}

// ErrUnknownServer is returned by a Dispatcher for a server it does not serve.
var ErrUnknownServer = errors.New("unknown tool server")

// DeliveryError describes a delivery that did not produce a tool result.
type DeliveryError struct {
	Err error
	// NotDelivered: the tool certainly did not see the call (the connection
	// was refused, or the server answered 429/503 before running it). Such
	// a call may be retried even under at_most_once.
	NotDelivered bool
	// Retryable: a later attempt may succeed (refused connection, 502, 503,
	// 429, a timeout). Permanent failures leave it false.
	Retryable bool
	// RetryAfter is the server's Retry-After, if it sent one (0 = none).
	RetryAfter time.Duration
}

func (e *DeliveryError) Error() string {
	what := "delivery failed"
	switch {
	case e.NotDelivered && e.Retryable:
		what = "not delivered (transient)"
	case e.NotDelivered:
		what = "not delivered"
	case e.Retryable:
		what = "delivery failed (transient)"
	}
	return fmt.Sprintf("%s: %v", what, e.Err)
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// Delivery semantics a tool declares (policy `delivery`).
const (
	// AtLeastOnce (default): after a crash or an ambiguous failure the call
	// is re-sent with the same Idempotency-Key; the tool server deduplicates.
	AtLeastOnce = "at_least_once"
	// AtMostOnce: never re-sent once it may have reached the tool; a crash
	// or ambiguous failure ends the call with its outcome recorded unknown.
	AtMostOnce = "at_most_once"
)
