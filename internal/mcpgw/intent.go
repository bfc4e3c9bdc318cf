package mcpgw

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The governed intent is covered by parameter_hash, so the kernel must see
// the exact bytes the agent sent, for its strict decoder to refuse
// duplicate or case-folded member names and unsafe numbers as it does on
// POST /v1/calls. The SDK hands a tool handler _meta only decoded into
// map[string]any, where duplicates have collapsed and big numbers have
// been rounded. So ServeHTTP takes the member's raw bytes from the POST
// body itself and passes them to the handler in intentHeader, which only
// it may set (RequestExtra.Header is the HTTP request's header).
const intentHeader = "Chio-Internal-Governed-Intent"

// withRawIntent prepares r for the SDK's handler: intentHeader is removed
// whatever the client sent, and set to the base64url of
// _meta["chio/governed_intent"] when the body is one tools/call carrying
// one. The body is read (up to MaxRequestBytes; a longer one is left for
// the SDK to refuse) and replaced by the same bytes; one with data after
// its JSON value is refused (errTrailingData); ids the SDK would answer as
// others were refused before (RefuseAmbiguousIDs, ids.go). Only an authenticated
// request comes here (Gateway.New), and an error is a 400 with its text.
func withRawIntent(w http.ResponseWriter, r *http.Request, timeout time.Duration) error {
	r.Header.Del(intentHeader)
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	// The read is bounded in time as httpapi.readBody's is: a client
	// trickling its body would otherwise hold a connection and a goroutine
	// indefinitely. A connection deadline is wall-clock time by nature,
	// not the kernel's clock. It is cleared after the read: a parked call
	// is answered over the same request much later, and must not meet an
	// expired read deadline (net/http clears it itself once a body reaches
	// EOF; an oversized body left partly unread does not). A writer
	// without deadlines, such as a test recorder, reads unbounded, as in
	// httpapi.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("cannot read the request body: %w", err)
	}
	if len(data) > MaxRequestBytes {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), r.Body))
		return nil
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(data))
	if trailingData(data) {
		return errTrailingData
	}
	// A cheap test first: most calls carry no intent. (One whose member
	// name is escaped is not read here, and is refused by rawIntent.)
	if !bytes.Contains(data, []byte(MetaIntent)) {
		return nil
	}
	if raw, ok := intentMember(data); ok {
		r.Header.Set(intentHeader, base64.RawURLEncoding.EncodeToString(raw))
	}
	return nil
}

// errTrailingData refuses a body that holds more than its one message.
var errTrailingData = errors.New("trailing data after the JSON-RPC message: send one message per POST")

// trailingData reports whether data holds anything but white space after
// its first JSON value. The SDK's decoder reads that value and ignores the
// rest, so garbage or a second message after it would go unanswered and
// unnoticed. Only the framing is judged here: a body that is not JSON at
// all, or holds duplicate names or invalid UTF-8, is left to the SDK and
// the handlers, which refuse it with their own reasons.
func trailingData(data []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadValue(); err != nil {
		return false
	}
	_, err := dec.ReadToken()
	return err != io.EOF
}

// intentMember returns params._meta["chio/governed_intent"] of a single
// tools/call message, exactly as sent. Names match exactly (as the SDK's
// decoder does), and a duplicate name on the way is not read (jsonv2's
// default): the handler then refuses the intent.
func intentMember(data []byte) (jsontext.Value, bool) {
	var msg, params, meta map[string]jsontext.Value
	var method string
	if jsonv2.Unmarshal(data, &msg) != nil || jsonv2.Unmarshal(msg["method"], &method) != nil || method != "tools/call" ||
		jsonv2.Unmarshal(msg["params"], &params) != nil || jsonv2.Unmarshal(params["_meta"], &meta) != nil {
		return nil, false
	}
	raw, ok := meta[MetaIntent]
	return raw, ok
}

// rawIntent is the governed intent of a tools/call as the agent sent it
// (nil when absent or null), from the bytes withRawIntent captured. A
// call whose decoded _meta has an intent the capture did not see (a batch,
// an escaped member name, a duplicate name) is refused, never passed on
// re-encoded.
func rawIntent(meta mcpsdk.Meta, h http.Header) ([]byte, error) {
	v, inMeta := meta[MetaIntent]
	enc := h.Get(intentHeader)
	if !inMeta || v == nil {
		if enc != "" && enc != base64.RawURLEncoding.EncodeToString([]byte("null")) {
			return nil, fmt.Errorf("_meta[%q] could not be read exactly", MetaIntent)
		}
		return nil, nil
	}
	if enc == "" {
		return nil, fmt.Errorf("_meta[%q] could not be read exactly: send one tools/call per request, "+
			"with the member named plainly and only once", MetaIntent)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return nil, errors.New("internal: undecodable intent capture")
	}
	return raw, nil
}
