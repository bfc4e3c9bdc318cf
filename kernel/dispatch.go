package kernel

import (
	"context"
	"encoding/json"
	"errors"
)

// DispatchRequest is what a tool server receives for an allowed call.
// RequestID doubles as the idempotency key: a server that sees the same
// RequestID twice must not perform the effect twice.
type DispatchRequest struct {
	RequestID string          `json:"request_id"`
	Server    string          `json:"-"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// DispatchResult is the tool's answer. A tool-level failure (the tool ran
// and reported an error) is ToolError, recorded in the allow receipt's
// metadata; Output is the tool's JSON output (null when absent).
type DispatchResult struct {
	Output    json.RawMessage
	ToolError string
}

// Dispatcher delivers allowed calls to tool servers. It is implemented
// outside the kernel (internal/dispatch) so the kernel imports no transport.
type Dispatcher interface {
	Dispatch(ctx context.Context, req DispatchRequest) (DispatchResult, error)
}

// ErrUnknownServer is returned by a Dispatcher for a server it does not serve.
var ErrUnknownServer = errors.New("unknown tool server")
