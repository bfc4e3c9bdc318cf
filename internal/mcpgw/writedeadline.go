package mcpgw

import (
	"net/http"
	"sync/atomic"
	"time"
)

// deadlineWriter bounds each write of an /mcp response: a client that stops
// reading is cut after the write timeout instead of pinning a goroutine, its
// connection and the encoded message (a tools/call result is up to 1 MiB)
// for ever. The gateway answers a POST as an SSE stream (the SDK's default)
// and the SDK writes each message, then flushes it; both get a deadline.
//
// The deadline is set before a write and cleared after it, never left
// armed: on HTTP/2 an armed deadline resets the stream when it passes even
// if nothing is being written, which would cut a parked call or a quiet
// standalone stream; on HTTP/1 it would outlive this request and cut the
// next one on the connection. A connection deadline is wall-clock time by
// nature, not the kernel's clock. A writer without deadlines (a test
// recorder) writes unbounded.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	wrote   atomic.Bool // the SDK writes from its own goroutines
}

func newDeadlineWriter(w http.ResponseWriter, timeout time.Duration) *deadlineWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.wrote.Store(true)
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	defer d.rc.SetWriteDeadline(time.Time{})
	return d.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls.
func (d *deadlineWriter) FlushError() error {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	defer d.rc.SetWriteDeadline(time.Time{})
	return d.rc.Flush()
}

func (d *deadlineWriter) Flush() { _ = d.FlushError() }

// Unwrap lets http.ResponseController reach the connection (read deadlines).
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// finish flushes, under a deadline, what the handler left buffered, so that
// net/http writes only the response's last framing after the handler
// returns. A response with no body is left for net/http to frame.
func (d *deadlineWriter) finish() {
	if d.wrote.Load() {
		_ = d.FlushError()
	}
}
