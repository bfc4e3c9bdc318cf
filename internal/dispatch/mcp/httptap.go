package mcp

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// httpTap is the Streamable HTTP side of the tap: an http.RoundTripper that
// sees each JSON-RPC message chio POSTs and every message the upstream
// answers with, and bounds the size of each answer before the SDK parses it.
type httpTap struct {
	base http.RoundTripper
	tap  *tap
}

func (h *httpTap) RoundTrip(req *http.Request) (*http.Response, error) {
	var s *slot
	if req.Method == http.MethodPost && req.Body != nil && req.Body != http.NoBody {
		// The SDK sends one message per POST from memory: read it here
		// (not through GetBody, which must not survive for a tools/call)
		// and hand the Transport a fresh reader over the same bytes.
		data, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if msg, err := jsonrpc.DecodeMessage(data); err == nil {
			s = h.tap.outgoing(msg)
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(data))
		req.ContentLength = int64(len(data))
		if s == nil {
			// Any other message may be rewound (net/http re-sends only
			// what it knows was not written, or is idempotent).
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		} else {
			// A tools/call carries the request id as Idempotency-Key, as on
			// the http transport. That header plus a GetBody would make
			// net/http's Request.isReplayable true, and the Transport would
			// silently re-POST the call on a new connection when a reused
			// one dies after the write: the tool would run twice for one
			// attempt. With no GetBody it is never replayed, nor re-sent by
			// a redirect (which the client refuses anyway).
			req.GetBody = nil
			req.Header.Set("Idempotency-Key", s.key)
		}
	}
	resp, err := h.base.RoundTrip(req)
	if err != nil {
		// A refused or failed dial never reached the server; anything later
		// (a reset mid-request, a connection closed before the answer) may
		// have: the upstream may have read and run the call.
		var op *net.OpError
		if s != nil && !(errors.As(err, &op) && op.Op == "dial") {
			h.tap.markSent(s, 0)
		}
		return nil, err
	}
	if s != nil {
		h.tap.markSent(s, resp.StatusCode)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		resp.Body = &sseTap{r: resp.Body, tap: h.tap, slot: s}
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, MaxMessageBytes+1))
		resp.Body.Close()
		if err != nil {
			resp.Body = io.NopCloser(&errReader{err})
			break
		}
		if len(data) > MaxMessageBytes {
			// The body of a POST answers the message it carried, and only
			// that one: a tools/call's slot learns its answer was too large.
			if s != nil {
				h.tap.markOversize(s)
			}
			resp.Body = io.NopCloser(&errReader{errTooLarge})
			break
		}
		h.tap.incomingBytes(data)
		resp.Body = io.NopCloser(bytes.NewReader(data))
	default:
		resp.Body = &capped{r: resp.Body, left: MaxMessageBytes}
	}
	return resp, nil
}

type errReader struct{ err error }

func (e *errReader) Read([]byte) (int, error) { return 0, e.err }

// capped fails a body that runs past its limit.
type capped struct {
	r    io.ReadCloser
	left int
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errTooLarge
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= n
	return n, err
}

func (c *capped) Close() error { return c.r.Close() }

// sseTap passes an event stream through to the SDK (which applies its own
// per-event limit) and hands each complete event's data to the tap. It
// keeps at most MaxMessageBytes of one event; a larger event is dropped
// here (and fails in the SDK), but the first bytes of its data are kept:
// on the stream of a tools/call's POST (slot set) an oversized event is
// that call's answer only if they show it is (tap.overflow) — a progress
// or log notification sent before the answer is not. On any other stream
// (the standalone GET, a resumed stream) it is no call's. The calls it
// fails and is not the answer of settle as unknown.
type sseTap struct {
	r         io.ReadCloser
	tap       *tap
	slot      *slot
	line      []byte
	data      []byte
	lineOver  bool
	eventOver bool
	// raw counts the current event's bytes as the SDK does (field names
	// and line ends included). The SDK fails the stream the moment it
	// passes MaxMessageBytes, without reading to the event's end, and this
	// tap sees every byte before the SDK does: the event is attributed
	// (tap.overflow) then, not at an end that is never read.
	raw        int
	attributed bool
}

// sseLineHead is how much of an over-long line is kept: its field name
// ("data: ") and the first bytes of its value.
const sseLineHead = len("data: ") + overflowHeadBytes

func (s *sseTap) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.feed(p[:n])
	return n, err
}

func (s *sseTap) Close() error { return s.r.Close() }

func (s *sseTap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.appendLine(b)
			s.count(len(b))
			return
		}
		s.appendLine(b[:i])
		s.count(i + 1)
		s.endLine()
		b = b[i+1:]
	}
}

// count adds n bytes to the current event and attributes it once it is
// past MaxMessageBytes (see raw).
func (s *sseTap) count(n int) {
	s.raw += n
	if s.raw <= MaxMessageBytes || s.attributed {
		return
	}
	s.attributed = true
	if s.slot == nil {
		return
	}
	// The event's data so far: the data lines before, then the start of
	// the line being read if it is one.
	head := append([]byte(nil), s.data[:min(len(s.data), overflowHeadBytes)]...)
	if line := bytes.TrimSuffix(s.line, []byte("\r")); bytes.HasPrefix(line, []byte("data:")) {
		if len(head) > 0 {
			head = append(head, '\n')
		}
		head = append(head, bytes.TrimPrefix(line[5:], []byte(" "))...)
	}
	s.tap.overflow(head[:min(len(head), overflowHeadBytes)], s.slot)
}

func (s *sseTap) appendLine(b []byte) {
	if !s.lineOver && len(s.line)+len(b) <= MaxMessageBytes {
		s.line = append(s.line, b...)
		return
	}
	// Over the limit: keep only the line's start.
	s.lineOver = true
	if len(s.line) > sseLineHead {
		s.line = s.line[:sseLineHead]
	}
	s.line = append(s.line, b[:min(len(b), sseLineHead-len(s.line))]...)
}

func (s *sseTap) endLine() {
	line := bytes.TrimSuffix(s.line, []byte("\r"))
	over := s.lineOver
	s.line, s.lineOver = s.line[:0], false
	switch {
	case len(line) == 0 && !over: // end of event
		if s.eventOver {
			if s.slot != nil && !s.attributed {
				s.tap.overflow(s.data, s.slot)
			}
		} else if len(s.data) > 0 {
			s.tap.incomingBytes(s.data)
		}
		s.data, s.eventOver, s.raw, s.attributed = s.data[:0], false, 0, false
	case bytes.HasPrefix(line, []byte("data:")):
		v := bytes.TrimPrefix(line[5:], []byte(" "))
		if !s.eventOver && (over || len(s.data)+len(v)+1 > MaxMessageBytes) {
			// From now on s.data keeps only the event's first bytes.
			s.eventOver = true
			s.data = s.data[:min(len(s.data), overflowHeadBytes)]
		}
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, v...)
		if s.eventOver && len(s.data) > overflowHeadBytes {
			s.data = s.data[:overflowHeadBytes]
		}
	case over:
		s.eventOver = true // some other field too long: the SDK fails it
	}
}
