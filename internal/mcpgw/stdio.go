package mcpgw

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport serves MCP as newline-delimited JSON-RPC on in and out
// (`chio mcp serve`'s stdin and stdout), through the SDK's IOTransport,
// except for a line that is not a message the SDK can take: the SDK's
// transport ends the whole session on it (and the bridge with it, so
// every later call of the agent fails). Such a line is answered here, as
// a JSON-RPC server answers it — a parse error (-32700) for a line that is
// not one JSON value, an invalid request (-32600) for a JSON value that is
// not a JSON-RPC message, a batch the session cannot take, or a line over
// MaxStdioLineBytes — and skipped; the session goes on. The answer's id is
// the request's when one can be read, null otherwise.
func StdioTransport(in io.Reader, out io.Writer) mcpsdk.Transport {
	return stdioTransport(in, out, nil)
}

// stdioTransport is StdioTransport telling written, if not nil, of each
// message written to out and the write's error.
func stdioTransport(in io.Reader, out io.Writer, written func([]byte, error)) mcpsdk.Transport {
	pr, pw := io.Pipe()
	w := &messageWriter{w: out, written: written}
	go (&stdinFilter{out: w}).run(in, pw)
	// The lines are bounded here (a line over the bound is answered, not
	// passed on), so the SDK's own bound, which would end the session, is
	// off.
	return &mcpsdk.IOTransport{Reader: pr, Writer: w, MaxLineLength: -1}
}

// messageWriter writes the SDK's messages and the filter's answers to the
// same stdout, one whole message at a time (the SDK writes each message,
// newline included, in one Write). Closing it leaves out open.
type messageWriter struct {
	mu      sync.Mutex
	w       io.Writer
	written func([]byte, error) // nil: not told
}

func (m *messageWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.w.Write(p)
	if m.written != nil {
		m.written(p, err)
	}
	return n, err
}

func (*messageWriter) Close() error { return nil }

// stdinFilter passes the SDK the lines it can take, and answers the rest.
type stdinFilter struct {
	out *messageWriter
	// batches: the client's initialize asked for a protocol version in
	// which the SDK takes a batch (before 2025-06-18). In later versions
	// the SDK ends the session on one.
	batches bool
	// initialized: an initialize request (with an id and params) went to
	// the SDK. The session's version is that one's: the SDK refuses a
	// later initialize.
	initialized bool
}

func (f *stdinFilter) run(in io.Reader, pw *io.PipeWriter) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, head, over, err := readLine(br, MaxStdioLineBytes)
		if over {
			f.answer(headID(head), jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: a message longer than %d bytes", MaxStdioLineBytes))
		} else if len(line) > 0 {
			if id, code, reason := f.check(line); code != 0 {
				f.answer(id, code, reason)
			} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return // the session has ended
			}
		}
		if err != nil {
			pw.CloseWithError(err) // io.EOF: the client closed stdin, and the session ends
			return
		}
	}
}

// stdioHeadBytes is how much of a line over the bound is kept to find its
// id (headID).
const stdioHeadBytes = 4 << 10

// readLine reads one line without its line ending, trimmed of white
// space. over: it was longer than limit (it is read to its end, and not
// returned); head is then its first stdioHeadBytes.
func readLine(br *bufio.Reader, limit int) (line, head []byte, over bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !over {
			line = append(line, chunk...)
			if over = len(bytes.TrimRight(line, "\r\n")) > limit; over {
				head = bytes.Clone(line[:stdioHeadBytes])
				line = nil
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimSpace(line), head, over, err
		}
	}
}

// headID is the id of an over-long request, when its first bytes show
// one (a string or an integer) and its method (before any member too long
// to see past), so the request is answered with it; nil otherwise. A
// message that shows no method may be a response (the client's answer to
// a request of the server's): answered with its id, the error would end
// the client's own request of that id (requestID likewise).
func headID(head []byte) json.RawMessage {
	d := jsontext.NewDecoder(bytes.NewReader(head))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	var id json.RawMessage
	method := false
	for {
		name, err := d.ReadToken()
		if err != nil || name.Kind() != '"' {
			break
		}
		switch name.String() {
		case "id":
			v, err := d.ReadValue()
			if err != nil || !(v.Kind() == '"' || v.Kind() == '0' && integer(v)) {
				return nil
			}
			id = json.RawMessage(bytes.Clone(v))
		case "method":
			method = true
			err = d.SkipValue()
		default:
			err = d.SkipValue()
		}
		if err != nil || id != nil && method {
			break
		}
	}
	if !method {
		return nil
	}
	return id
}

// check returns a non-zero JSON-RPC error code, with the id to answer
// and why, for a line the SDK's transport would end the session on. The
// SDK decodes each message with jsonrpc.DecodeMessage, as here.
func (f *stdinFilter) check(line []byte) (id json.RawMessage, code int64, reason string) {
	if !json.Valid(line) {
		return nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value"
	}
	if line[0] == '[' {
		if reason := f.checkBatch(line); reason != "" {
			return nil, jsonrpc.CodeInvalidRequest, reason
		}
		return nil, 0, ""
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return requestID(line), jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()
	}
	if otherID(line) {
		return nil, jsonrpc.CodeInvalidRequest, unreadableIDReason
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" && req.IsCall() && !f.initialized {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			f.initialized = true
			// The versions the SDK agrees to and takes batches in.
			f.batches = p.ProtocolVersion == "2024-11-05" || p.ProtocolVersion == "2025-03-26"
		}
	}
	return nil, 0, ""
}

// checkBatch says why the SDK would end the session on a batch, or "".
func (f *stdinFilter) checkBatch(line []byte) string {
	if !f.batches {
		return "invalid request: JSON-RPC batches are not supported in this session's protocol version"
	}
	// The SDK bounds the nesting of the whole batch as it bounds a
	// message's: decoding it as a response's result checks that bound
	// (one level early, which refuses rather than ends the session).
	wrapped := append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), line...), '}')
	if _, err := jsonrpc.DecodeMessage(wrapped); err != nil {
		return "invalid request: " + err.Error()
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
		return "invalid request: an empty batch"
	}
	for _, raw := range raws {
		if _, err := jsonrpc.DecodeMessage(raw); err != nil {
			return "invalid request: in a batch: " + err.Error()
		}
		if otherID(raw) {
			return unreadableBatchIDReason
		}
	}
	if reusesID(raws) {
		return reusedIDReason
	}
	return ""
}

// requestID is the id of a request that could not be taken, when it has a
// method and an id JSON-RPC allows (a string or an integer): the client
// waiting for it gets its answer. Otherwise nil (answered with id null).
func requestID(line []byte) json.RawMessage {
	var m struct {
		Method jsontext.Value `json:"method"`
		ID     jsontext.Value `json:"id"`
	}
	// By the members' exact names, as the SDK reads them ("ID" is no id),
	// and as leniently otherwise (otherID).
	if jsonv2.Unmarshal(line, &m, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) != nil || m.Method == nil {
		return nil
	}
	var id any
	d := json.NewDecoder(bytes.NewReader(m.ID))
	d.UseNumber()
	if d.Decode(&id) != nil {
		return nil
	}
	switch v := id.(type) {
	case string:
		return json.RawMessage(m.ID)
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return json.RawMessage(m.ID)
		}
	}
	return nil
}

// integer reports whether a JSON number is an integer within int64.
func integer(n []byte) bool {
	_, err := strconv.ParseInt(string(n), 10, 64)
	return err == nil
}

// answer writes a JSON-RPC error response (id nil: null).
func (f *stdinFilter) answer(id json.RawMessage, code int64, message string) {
	_, _ = f.out.Write(append(rpcError(id, code, message), '\n'))
}
