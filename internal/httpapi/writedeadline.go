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
	"time"
)

// timedWriter carries this server's write timeout down to the helpers that
// write answers (writeJSON and friends take only the ResponseWriter). It
// adds no behaviour: Unwrap lets http.ResponseController reach the
// connection underneath for deadlines and flushes.
type timedWriter struct {
	http.ResponseWriter
	timeout time.Duration
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
// answers without streaming: its answer, from its first byte, is written
// under this server's write timeout. The deadline is set at that first
// byte, not when the request arrives, so a handler may first wait (a vote's
// commit under back-pressure) as long as it needs. Never for streams: MCP
// sets its own per write.
func (s *Server) HandleAnswers(pattern string, h http.Handler) {
	timeout := s.cfg.StreamWriteTimeout
	s.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&deadlineAtFirstByte{ResponseWriter: w, timeout: timeout}, r)
	}))
}

// deadlineAtFirstByte sets one write deadline, for the whole answer, when
// its header or first byte is written.
type deadlineAtFirstByte struct {
	http.ResponseWriter
	timeout time.Duration
	armed   bool
}

func (d *deadlineAtFirstByte) Unwrap() http.ResponseWriter { return d.ResponseWriter }

func (d *deadlineAtFirstByte) arm() {
	if !d.armed {
		d.armed = true
		_ = http.NewResponseController(d.ResponseWriter).SetWriteDeadline(time.Now().Add(d.timeout))
	}
}

func (d *deadlineAtFirstByte) WriteHeader(code int) {
	d.arm()
	d.ResponseWriter.WriteHeader(code)
}

func (d *deadlineAtFirstByte) Write(p []byte) (int, error) {
	d.arm()
	return d.ResponseWriter.Write(p)
}
