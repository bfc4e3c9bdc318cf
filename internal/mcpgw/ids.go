package mcpgw

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// unreadableIDReason is the answer to a message whose id the SDK would
// read as another one (otherID), on stdio and over HTTP alike.
const (
	unreadableIDReason      = "invalid request: an id must be a string of valid UTF-8 or an integer the server reads exactly (any within ±2^53)"
	unreadableBatchIDReason = "invalid request: in a batch: an id must be a string of valid UTF-8 or an integer the server reads exactly (any within ±2^53)"
)

// otherID reports whether a message's id is one the SDK does not read
// as itself. A number: not an integer within int64, or one a float64
// cannot hold. The SDK decodes it as a float64, then converts it to an
// int64 (9.5 as 9, 9007199254740993 as 9007199254740992). A string: not
// valid UTF-8, or with a lone surrogate escape; the SDK reads both as
// U+FFFD ("a\xff" and "a\ud800" as "a\uFFFD"). Either would be answered
// as another request the client may be waiting for. Its member is read
// by its exact name, as the SDK reads it. The message is read as
// leniently as the SDK reads it otherwise: a member named twice, or a
// string that is not UTF-8, made a strict read fail and the id pass.
func otherID(msg []byte) bool {
	var m struct {
		ID jsontext.Value `json:"id"`
	}
	if jsonv2.Unmarshal(msg, &m, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) != nil || len(m.ID) == 0 {
		return false
	}
	switch m.ID.Kind() {
	case '0':
		return !readExactly(m.ID)
	case '"':
		return !m.ID.IsValid() // strict: valid UTF-8, no lone surrogate
	}
	return false
}

// readExactly reports whether the SDK reads JSON number n as the integer
// n says: an integer within int64 that a float64 holds exactly.
func readExactly(n []byte) bool {
	i, err := strconv.ParseInt(string(n), 10, 64)
	f := float64(i)
	return err == nil && f >= math.MinInt64 && f < math.MaxInt64 && int64(f) == i
}

// idProblem says why the SDK would answer body (one JSON-RPC message or
// a batch) ambiguously, or "": a message has an id the SDK reads as
// another (otherID), or a batch uses one request id twice (reusesID).
// A body that is not JSON is left to the SDK, which refuses it.
func idProblem(body []byte) string {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		if otherID(b) {
			return unreadableIDReason
		}
		return ""
	}
	var batch []jsontext.Value
	if jsonv2.Unmarshal(b, &batch, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) != nil {
		return ""
	}
	for _, msg := range batch {
		if otherID(msg) {
			return unreadableBatchIDReason
		}
	}
	if reusesID(batch) {
		return reusedIDReason
	}
	return ""
}

// reusedIDReason is the answer to a batch that uses one request id twice.
const reusedIDReason = "invalid request: a batch uses one id twice"

// reusesID reports whether two requests of a batch share an id, as the
// SDK reads ids. The SDK answers one of them and drops the other's
// answer: the client gets one answer for two requests, both of which may
// have run, and cannot tell whose it is. A message the SDK cannot decode
// is skipped here (the SDK refuses the batch for it).
func reusesID[M ~[]byte](batch []M) bool {
	ids := map[jsonrpc.ID]bool{}
	for _, raw := range batch {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			if ids[req.ID] {
				return true
			}
			ids[req.ID] = true
		}
	}
	return false
}

// RefuseAmbiguousIDs serves next, an MCP Streamable HTTP handler (the
// SDK's, as `chio mcp serve --listen` serves the bridge), except a POST
// whose ids the SDK would answer ambiguously (idProblem): that is
// answered 400 with a JSON-RPC invalid request, id null, as the stdio
// transport answers it, and next never sees it (an initialize opens no
// session, an answer never goes out under another request's id).
func RefuseAmbiguousIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !refuseAmbiguousID(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// refuseAmbiguousID answers a POST whose ids the SDK would answer
// ambiguously (idProblem), and reports whether it did. The body
// is read up to MaxRequestBytes and put back for the SDK; a longer one is
// left to the SDK, which refuses it.
func refuseAmbiguousID(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	if err != nil {
		http.Error(w, "cannot read the request body: "+err.Error(), http.StatusBadRequest)
		return true
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
	if len(data) > MaxRequestBytes {
		return false
	}
	reason := idProblem(data)
	if reason == "" {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(rpcError(nil, jsonrpc.CodeInvalidRequest, reason))
	return true
}

// rpcError is a JSON-RPC error response (id nil: null).
func rpcError(id json.RawMessage, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	type rpcErr struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcErr          `json:"error"`
	}{"2.0", id, rpcErr{code, message}})
	return b
}
