package mcp

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// An upstream message over MaxMessageBytes is never parsed whole: the
// session fails on it. Whether it was the answer of a waiting tools/call
// decides how that call settles — a final tool error if it was (asking
// again gets the same answer), or "may have run" (unknown) if it was
// anything else: a log or progress notification, the answer to another
// request, a request from the server. So the first overflowHeadBytes of
// each message are kept, and an oversized one is attributed to a call only
// when that head certainly makes it the call's response (responseID).

// overflowHeadBytes is how much of a message is kept to identify it.
const overflowHeadBytes = 4 << 10

// head keeps the first overflowHeadBytes of a message.
type head struct{ b []byte }

func (h *head) add(p []byte) {
	if room := overflowHeadBytes - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(len(p), room)]...)
	}
}

func (h *head) reset() { h.b = h.b[:0] }

// responseID reads the top-level members of the start of an oversized
// message and returns the JSON-RPC id of the response it is. It reports
// false unless the head shows all of:
//
//   - a "result" or "error" member (a response),
//   - no "method" member (a request or notification has one),
//   - an "id" member that is an integer or a string,
//
// and the head ends inside the top-level object (the whole message is the
// one that overflowed, not a small one followed by something else). Names
// are compared as the SDK's decoder does (case-insensitively); an "id" not
// spelled exactly so, a duplicate name, or bad JSON is not a response.
// Members past the head are not seen: an "id" after a large "result" is
// not found, and the message is no call's.
func responseID(b []byte) (jsonrpc.ID, bool) {
	var none jsonrpc.ID
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return none, false
	}
	var id jsonrpc.ID
	haveID, response := false, false
	for {
		tok, err := dec.ReadToken() // a member's name, or the object's end
		if err != nil {
			return id, ranOut(err) && haveID && response
		}
		if tok.Kind() == '}' {
			return none, false // the whole message was in the head
		}
		name := tok.String()
		switch {
		case strings.EqualFold(name, "method"):
			return none, false
		case strings.EqualFold(name, "result"), strings.EqualFold(name, "error"):
			response = true
		case strings.EqualFold(name, "id"):
			if name != "id" {
				return none, false
			}
			v, err := dec.ReadToken()
			if err != nil || !more(b, dec.InputOffset()) {
				// The id was cut (a number at the head's end may
				// go on: 12 of 123), or bad JSON.
				return none, false
			}
			if id, haveID = parseID(v); !haveID {
				return none, false
			}
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return id, ranOut(err) && haveID && response
		}
	}
}

// more reports whether b has more than white space after offset off.
func more(b []byte, off int64) bool {
	return off < int64(len(bytes.TrimRight(b, " \t\r\n")))
}

// ranOut reports whether err is the head ending, not bad JSON.
func ranOut(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }

// parseID reads a JSON-RPC id as the SDK assigns them: an integer (no
// fraction or exponent, exact in a float64) or a string.
func parseID(tok jsontext.Token) (jsonrpc.ID, bool) {
	var id jsonrpc.ID
	var err error
	switch tok.Kind() {
	case '"':
		id, err = jsonrpc.MakeID(tok.String())
	case '0':
		n, perr := strconv.ParseInt(tok.String(), 10, 64)
		if perr != nil || n > 1<<53 || n < -(1<<53) {
			return id, false
		}
		id, err = jsonrpc.MakeID(float64(n))
	default:
		return id, false
	}
	return id, err == nil && id.IsValid()
}

// overflow handles a message over MaxMessageBytes whose first bytes are h.
// It marks the waiting call whose response it is (and, when only is set,
// only if it is that call: the stream of one POST answers that POST). It
// never marks a call sent: only a completed write or a readable answer
// shows that a request reached the server.
func (t *tap) overflow(h []byte, only *slot) {
	id, ok := responseID(h)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s == nil || (only != nil && s != only) {
		return
	}
	s.oversize = true
}
