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
const unreadableIDReason = "invalid request: an id must be a string or an integer the server reads exactly (any within ±2^53)"

// otherID reports whether a message's id is a number the SDK does not
// read as itself: not an integer within int64, or one a float64 cannot
// hold. The SDK decodes it as a float64, then converts it to an int64
// (9.5 as 9, 9007199254740993 as 9007199254740992), and would answer it
// as another request the client may be waiting for. Its member
// is read by its exact name, as the SDK reads it. The message is read
// as leniently as the SDK reads it otherwise: a member named twice, or a
// string that is not UTF-8, made a strict read fail and the id pass.
func otherID(msg []byte) bool {
	var m struct {
		ID jsontext.Value `json:"id"`
	}
	err := jsonv2.Unmarshal(msg, &m, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return err == nil && len(m.ID) > 0 && m.ID.Kind() == '0' && !readExactly(m.ID)
}

// readExactly reports whether the SDK reads JSON number n as the integer
// n says: an integer within int64 that a float64 holds exactly.
func readExactly(n []byte) bool {
	i, err := strconv.ParseInt(string(n), 10, 64)
	f := float64(i)
	return err == nil && f >= math.MinInt64 && f < math.MaxInt64 && int64(f) == i
}

// unreadableID reports whether body, one JSON-RPC message or a batch of
// them, holds a message whose id the SDK would read as another (otherID).
// A body that is not JSON is left to the SDK, which refuses it.
func unreadableID(body []byte) bool {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		var batch []jsontext.Value
		if jsonv2.Unmarshal(b, &batch, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) != nil {
			return false
		}
		for _, msg := range batch {
			if otherID(msg) {
				return true
			}
		}
		return false
	}
	return otherID(body)
}

// RefuseUnreadableIDs serves next, an MCP Streamable HTTP handler (the
// SDK's, as `chio mcp serve --listen` serves the bridge), except a POST
// whose body holds an id the SDK would read as another: that is answered
// 400 with a JSON-RPC invalid request, id null, as the stdio transport
// answers it, and next never sees it (an initialize opens no session, an
// answer never goes out under another id).
func RefuseUnreadableIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !refuseUnreadableID(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// refuseUnreadableID answers a POST whose body holds an id the SDK would
// read as another (unreadableID), and reports whether it did. The body
// is read up to MaxRequestBytes and put back for the SDK; a longer one is
// left to the SDK, which refuses it.
func refuseUnreadableID(w http.ResponseWriter, r *http.Request) bool {
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
	if len(data) > MaxRequestBytes || !unreadableID(data) {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(rpcError(nil, jsonrpc.CodeInvalidRequest, unreadableIDReason))
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
