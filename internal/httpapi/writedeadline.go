package httpapi

// Write deadlines for every answer that is not a stream.
//
// An answer is encoded in full before its first byte is sent (a call's
// output can be 1 MiB). A client that sends a small request and then never
// reads would otherwise block that write for as long as it keeps the socket
// open, pinning a goroutine and the whole encoded answer. So every answer
// is written under a deadline (Config.StreamWriteTimeout, the bound SSE
// frames and export writes already have), set right before the write:
// a long-poll still waits its full ?wait= first. When the deadline passes
// the write fails and net/http closes the connection. Nothing else
// happens: a GET has no side effects, and every POST has made its change
// durable (kernel or session table) before its answer is written, and
// never looks at whether the write succeeded. An answer is one write, so
// the deadline bounds all of it: at the default 10 s a 1 MiB answer needs
// ~100 KB/s from its client.
//
// The server sets no global http.Server.WriteTimeout: that counts from the
// request's arrival, so it would cut SSE streams and long-polls. A deadline
// does not outlive its request: net/http clears it once the answer is
// flushed, before reading the next request on the connection.

import (
	"net/http"
	"sync/atomic"
	"time"
)

// timedWriter carries this server's write timeout down to the helpers that
// write answers (writeJSON and friends take only the ResponseWriter). Its
// one behaviour is closeUnread's (bodydeadline.go), as the answer starts;
// Unwrap lets http.ResponseController reach the connection underneath for
// deadlines and flushes.
type timedWriter struct {
	http.ResponseWriter
	timeout time.Duration
	body    *deadlineBody // the request's body, if it has one on HTTP/1
	started bool          // the answer's header is written
}

func (t *timedWriter) WriteHeader(code int) {
	t.start()
	t.ResponseWriter.WriteHeader(code)
}

func (t *timedWriter) Write(p []byte) (int, error) {
	t.start()
	return t.ResponseWriter.Write(p)
}

func (t *timedWriter) start() {
	if !t.started {
		t.started = true
		closeUnread(t.ResponseWriter, t.body)
	}
}

func (t *timedWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// boundWrite gives the answer about to be written its deadline: now plus
// the server's write timeout (StreamWriteTimeout when w did not come
// through ServeHTTP). Call it after any waiting and right before writing.
// The deadline is transport time, not decision time: it uses the real
// clock. A writer that cannot take a deadline (a test recorder) is written
// to anyway: it is not a network connection.
func boundWrite(w http.ResponseWriter) {
	timeout := StreamWriteTimeout
	if t, ok := w.(*timedWriter); ok {
		timeout = t.timeout
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout))
}

// plainWriter is the writer net/http gave this request. http.MaxBytesReader
// needs it (it asks the server to close an over-long request's connection
// through a method only that writer has), and so do handlers mounted with
// Handle, which see exactly what net/http passed.
func plainWriter(w http.ResponseWriter) http.ResponseWriter {
	if t, ok := w.(*timedWriter); ok {
		return t.ResponseWriter
	}
	return w
}

// bounded gives h's whole answer one deadline, set as h starts, for a
// handler that writes without writeJSON and never waits (the Prometheus
// handler: gathering takes milliseconds).
func bounded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		boundWrite(w)
		h.ServeHTTP(w, r)
	})
}

// HandleAnswers mounts h like Handle, for a handler from another package
// (the dashboard's pages, an email link's page, Slack's interactions) that
// answers without streaming: each of its writes is bounded by this
// server's write timeout (DeadlineWriter). The deadline is set at a write,
// not when the request arrives, so a handler may first wait (a vote's
// commit under back-pressure) as long as it needs.
func (s *Server) HandleAnswers(pattern string, h http.Handler) {
	timeout := s.cfg.StreamWriteTimeout
	s.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dw := NewDeadlineWriter(w, timeout)
		defer dw.Finish()
		h.ServeHTTP(dw, r)
	}))
}

// DeadlineWriter bounds each write (and flush) of a response by a timeout:
// a client that stops reading is cut after it instead of pinning a
// goroutine, its connection and the encoded answer. The deadline is set
// before a write and cleared after it, never left armed: on HTTP/2 an armed
// deadline resets the stream when it passes even if nothing is being
// written (a quiet stream, a parked call), and on HTTP/1 it would outlive
// the request and cut the next one on the connection. It is wall-clock
// time, not the kernel's clock. A writer without deadlines (a test
// recorder) writes unbounded. Used by HandleAnswers and the MCP gateway.
type DeadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	wrote   atomic.Bool // a handler may write from its own goroutines (the MCP SDK does)
}

// NewDeadlineWriter wraps w; Finish it when the handler returns.
func NewDeadlineWriter(w http.ResponseWriter, timeout time.Duration) *DeadlineWriter {
	return &DeadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: timeout}
}

func (d *DeadlineWriter) Write(p []byte) (int, error) {
	d.wrote.Store(true)
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	defer d.rc.SetWriteDeadline(time.Time{})
	return d.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls.
func (d *DeadlineWriter) FlushError() error {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	defer d.rc.SetWriteDeadline(time.Time{})
	return d.rc.Flush()
}

func (d *DeadlineWriter) Flush() { _ = d.FlushError() }

// Unwrap lets http.ResponseController reach the connection (read deadlines).
func (d *DeadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// Finish flushes, under a deadline, what the handler left buffered, so that
// net/http writes only the response's last framing after the handler
// returns. A response with no body is left for net/http to frame.
func (d *DeadlineWriter) Finish() {
	if d.wrote.Load() {
		_ = d.FlushError()
	}
}
