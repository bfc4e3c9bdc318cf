package dispatch

import "time"

const (
	// MaxResponseBytes bounds a tool server's response body. A larger body
	// is an error, never silently truncated: a truncated JSON document would
	// either be invalid or, worse, mean something else.
	MaxResponseBytes = 1 << 20

	// DefaultTimeout applies to servers whose timeout_seconds is unset.
	DefaultTimeout = 10 * time.Second

	// maxToolErrorBody is how much of a non-2xx body goes into ToolError;
	// it ends up in a receipt, so it stays short.
	maxToolErrorBody = 512

	// MaxRetryAfter caps a server's Retry-After (the kernel also stops at
	// the tool's retry deadline).
	MaxRetryAfter = 60 * time.Second
)
