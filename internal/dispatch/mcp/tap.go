package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MetaIdempotencyKey is the _meta member of every tools/call that carries
// the chio request id. An upstream that performs effects should deduplicate
// on it: the kernel re-sends an at_least_once call with the same key after
// a crash or an ambiguous failure.
const MetaIdempotencyKey = "chio/idempotency_key"

// MetaAttempt carries the delivery attempt (1, 2, …) for the upstream's logs.
const MetaAttempt = "chio/attempt"

// tap watches one session's JSON-RPC traffic so that Dispatch can record
// the exact bytes of the upstream's CallToolResult (the SDK hands back only
// a decoded struct, and re-encoding it would not be what the tool said) and
// know whether its request left chio at all (which decides NotDelivered).
//
// A tools/call is matched to its slot by the idempotency key in _meta on
// the way out, and by JSON-RPC id on the way back. One tap belongs to one
// session: JSON-RPC ids restart with every connection.
type tap struct {
	mu    sync.Mutex
	byKey map[string]*slot
	byID  map[jsonrpc.ID]*slot
}

// slot is what the tap learned about one Dispatch.
type slot struct {
	key      string
	sent     bool            // the request was written / reached the server
	status   int             // HTTP status of its POST (0 on stdio)
	raw      json.RawMessage // the result member of the response, exactly
	answered bool            // a response (result or error) came from the server
	// oversize: a message over MaxMessageBytes came that is certainly
	// this call's answer (see markOversize, overflow).
	oversize bool
}

func newTap() *tap { return &tap{byKey: map[string]*slot{}, byID: map[jsonrpc.ID]*slot{}} }

var errBusyKey = errors.New("a dispatch with this request id is already in flight on this server")

// expect opens the slot for a dispatch of key.
func (t *tap) expect(key string) (*slot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byKey[key] != nil {
		return nil, errBusyKey
	}
	s := &slot{key: key}
	t.byKey[key] = s
	return s, nil
}

// release forgets s (and its JSON-RPC id, if no answer came).
func (t *tap) release(s *slot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byKey, s.key)
	for id, v := range t.byID {
		if v == s {
			delete(t.byID, id)
		}
	}
}

// view returns a copy of s's state, safe to read after the call.
func (t *tap) view(s *slot) slot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return *s
}

// outgoing registers a tools/call request before it is written and
// returns its slot (nil for any other message).
func (t *tap) outgoing(msg jsonrpc.Message) *slot {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.ID.IsValid() {
		return nil
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return nil
	}
	var key string
	if json.Unmarshal(p.Meta[MetaIdempotencyKey], &key) != nil || key == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byKey[key]
	if s != nil {
		t.byID[req.ID] = s
	}
	return s
}

// sent marks s as having reached the upstream (status: its HTTP status).
func (t *tap) markSent(s *slot, status int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s.sent, s.status = true, status
}

// incoming records the raw result of a response to a watched request.
func (t *tap) incoming(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[resp.ID]
	if s == nil {
		return
	}
	delete(t.byID, resp.ID)
	// An answer proves the request arrived, even if it raced the end of
	// our write (markSent not yet called).
	s.answered, s.sent = true, true
	if resp.Error == nil {
		s.raw = bytes.Clone(resp.Result)
	}
}

// incomingBytes decodes one message the upstream sent (an HTTP body or an
// SSE event's data) and records it if it answers a watched request.
func (t *tap) incomingBytes(data []byte) {
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		t.incoming(msg)
	}
}

// markOversize records that s's own answer (the body of its POST) was
// over MaxMessageBytes.
func (t *tap) markOversize(s *slot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s.oversize = true
}

// tapTransport wraps a stdio transport's connection with the tap. (Only
// stdio: the Streamable HTTP connection must not be wrapped, the SDK relies
// on its concrete type; httptap.go watches that one at the HTTP layer.)
type tapTransport struct {
	inner mcpsdk.Transport
	tap   *tap
}

func (t *tapTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, tap: t.tap}, nil
}

type tapConn struct {
	mcpsdk.Connection
	tap *tap
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.tap.incoming(msg)
	}
	return msg, err
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	s := c.tap.outgoing(msg) // before the write: the answer may race it
	err := c.Connection.Write(ctx, msg)
	// A write that failed part way may have delivered the call.
	var partial *partialWriteError
	if s != nil && (err == nil || errors.As(err, &partial)) {
		c.tap.markSent(s, 0)
	}
	return err
}

// lineLimit sits under the SDK's stdio reader and enforces MaxMessageBytes
// per line itself: the first byte past the limit fails the read (the SDK
// then fails the connection). The first bytes of the line tell the tap
// whether it was a waiting call's answer (tap.overflow): if so that call
// ends as a final tool error, not retried as if the connection had merely
// dropped; anything else (a notification, another request's answer) is no
// call's, and the calls the failed connection ends may have run. (The
// SDK's own frame limit is set above this one, as a backstop: its count is
// not per line, and it would fail the connection before this reader ever
// saw byte MaxMessageBytes+1.)
//
// A line whose first byte (after white space) cannot begin a JSON-RPC
// message, one a server printed to stdout by mistake, ends the read too,
// before the SDK's decoder sees it, with an error that quotes it
// (errStrayLine): the decoder's own ("invalid character 'P' looking for
// beginning of value") named neither the line nor stdout.
type lineLimit struct {
	r       io.ReadCloser
	tap     *tap
	line    int   // bytes of the current line so far
	head    head  // its first bytes
	started bool  // the current line has had a byte other than white space
	err     error // sticky errTooLarge or errStrayLine
}

func (l *lineLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		end := n
		nl := bytes.IndexByte(p[i:n], '\n')
		if nl >= 0 {
			end = i + nl
		}
		part := p[i:end] // the current line's bytes in this read
		if k := bytes.IndexFunc(part, notSpace); !l.started && k >= 0 {
			l.started = true
			if c := part[k]; c != '{' && c != '[' {
				// The lines before it are the SDK's; the error comes
				// with the next read.
				l.err = &errStrayLine{line: clip(string(part[k:]), maxStrayLine)}
				if i > 0 {
					return i, nil
				}
				return 0, l.err
			}
		}
		if room := MaxMessageBytes - l.line; len(part) > room {
			l.head.add(part[:room])
			l.err = errTooLarge
			l.tap.overflow(l.head.b, nil)
			return i + room, l.err
		}
		l.line += len(part)
		l.head.add(part)
		if nl < 0 {
			break
		}
		l.line = 0
		l.head.reset()
		l.started = false
		i = end + 1
	}
	return n, err
}

func (l *lineLimit) Close() error { return l.r.Close() }

var errTooLarge = fmt.Errorf("upstream message larger than %d bytes", MaxMessageBytes)

// errStrayLine is a line on a stdio server's stdout that is not JSON-RPC.
type errStrayLine struct{ line string }

func (e *errStrayLine) Error() string {
	return fmt.Sprintf("the server wrote a line that is not JSON-RPC on stdout: %q "+
		"(stdout carries the protocol; a server logs on stderr)", e.line)
}

// maxStrayLine is how much of a stray line errStrayLine quotes.
const maxStrayLine = 200

func notSpace(r rune) bool { return r != ' ' && r != '\t' && r != '\r' }
