// Package connect bounds making a connection to chiod and tells a request
// that never got one, which wrote nothing, from one that may have been
// sent. The Go SDK and `chio call` share it, so they report the same
// failures as "not sent".
package connect

import (
	"context"
	"errors"
	"net"
	"net/http/httptrace"
	"time"
)

// DefaultTimeout bounds making a request's connection to chiod: the name
// lookup, the TCP connect and, for https, the TLS handshake, until the
// connection is ready to carry the request. The Python (connect_timeout=
// 10.0) and TypeScript (undici's connect timeout) SDKs bound the same steps
// by the same default.
const DefaultTimeout = 10 * time.Second

// ErrTimedOut is the cause of a request ended by WithTimeout's timer. It
// wraps nothing: it is not the caller's deadline.
var ErrTimedOut = errors.New("no connection to chiod within the connect timeout")

// WithTimeout returns ctx ended with cause ErrTimedOut unless the request
// gets its connection (httptrace's GotConn, which net/http calls before it
// writes a byte of the request, after the TLS handshake for https) within
// d; stop releases it. If the timer and the connection race, the request
// may be written: a caller counts an attempt as not sent only when GotConn
// never fired.
func WithTimeout(ctx context.Context, d time.Duration) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(d, func() { cancel(ErrTimedOut) })
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { timer.Stop() }}
	return httptrace.WithClientTrace(ctx, trace), func() { timer.Stop(); cancel(nil) }
}

// NeverMade reports a request error that says no connection was made: the
// dial failed (refused, no route, a name that does not resolve) or
// WithTimeout's timer ended it first. Nothing of the request was written.
func NeverMade(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, ErrTimedOut)
}
