package httpapi

// A time limit on reading every request body, and no draining of a body
// the route did not read.
//
// A client trickling a body a byte at a time would otherwise hold a
// connection and a goroutine for as long as it likes. That is so whether a
// handler reads the body or not: when a handler answers without reading
// it (a 401 before the body is looked at, an unknown route, a GET that
// carries a body), net/http drains up to 256 KiB of it before writing the
// answer, with no deadline of its own. So:
//
//   - the deadline is set as the request arrives, for every request that
//     has a body, whatever its route (routes mounted with Handle too);
//   - an answer of this package's routes that starts before the body was
//     read to its end is sent at once with "Connection: close" (HTTP/1),
//     which tells net/http not to drain: the client gets its 4xx now, and
//     the connection ends with the answer.
//
// It is not a server-wide ReadTimeout: that would also cut SSE streams and
// long-polls. Once the body has been read to its end the deadline is
// cleared, because net/http then watches the idle connection for the
// client going away, and a deadline passing there would cancel the
// request's context (a long tool call, an MCP stream) although the client
// is still waiting. The deadline is transport time: the real clock.

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// boundBodyRead arms the body-read deadline for r, if r has a body, and
// returns r with a body that clears the deadline at its end. body is that
// body on HTTP/1 (for closeUnread), else nil.
func boundBodyRead(w http.ResponseWriter, r *http.Request) (_ *http.Request, body *deadlineBody) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r, nil
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(BodyReadTimeout)) != nil {
		return r, nil // not a network connection (a test recorder)
	}
	b := &deadlineBody{ReadCloser: r.Body, rc: rc}
	// A shallow copy: net/http's own request must keep its own body, whose
	// type tells it how much of an unread body is left (it never drains
	// 256 KiB or more; it closes the connection instead).
	r2 := new(http.Request)
	*r2 = *r
	r2.Body = b
	if r.ProtoMajor != 1 {
		return r2, nil // HTTP/2 never drains: an unread body costs nothing
	}
	return r2, b
}

// closeUnread marks the answer about to start as the connection's last
// when the request's body has not been read to its end.
func closeUnread(w http.ResponseWriter, b *deadlineBody) {
	if b != nil && !b.done.Load() {
		w.Header().Set("Connection", "close")
	}
}

// deadlineBody clears the connection's read deadline once the body has
// been read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done atomic.Bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.done.CompareAndSwap(false, true) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
