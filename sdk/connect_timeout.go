package chio

import (
	"context"
	"fmt"
	"time"

	"github.com/chiokernel/chio/internal/connect"
)

// DefaultConnectTimeout bounds making a request's connection to chiod: the
// name lookup, the TCP connect and, for https, the TLS handshake, until the
// connection is ready to carry the request. The Python (connect_timeout=
// 10.0) and TypeScript (undici's connect timeout) SDKs bound the same
// steps by the same default. Nothing of a request is written before its
// connection is ready, so [Client.CallTool] reports a call whose every
// attempt timed out so as [ErrNotSent].
const DefaultConnectTimeout = connect.DefaultTimeout

// WithConnectTimeout sets how long a request may wait for its connection
// to chiod to be ready (default [DefaultConnectTimeout]). The answer is
// bounded by the per-request limit instead. It applies to a WithHTTPClient
// client too.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("%w: connect timeout %v must be positive", ErrBadRequest, d)
		}
		c.connectTimeout = d
		return nil
	}
}

// errConnectTimeout is the cause of a request ended by the connect timeout.
// It wraps nothing: it is not the caller's deadline.
var errConnectTimeout = connect.ErrTimedOut

// withConnectTimeout returns ctx ended with cause errConnectTimeout unless
// the request gets its connection (httptrace's GotConn, which net/http
// calls before it writes a byte of the request) within d; stop releases
// it. If the timer and the connection race, the request may be written:
// CallTool counts an attempt as not sent only when GotConn never fired.
// `chio call` bounds its attempts with the same code (internal/connect).
func withConnectTimeout(ctx context.Context, d time.Duration) (_ context.Context, stop func()) {
	return connect.WithTimeout(ctx, d)
}
