package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
)

// An upstream MCP server receives a call's arguments as the exact
// canonical bytes parameter_hash covers. chio hands them to the go-sdk as
// a json.RawMessage; this holds only while the SDK's encoder leaves them
// alone (it compacts, which canonical bytes already are, and does not
// HTML-escape '<', '>', '&', U+2028 or U+2029).
func TestUpstreamReceivesTheCanonicalArguments(t *testing.T) {
	s := &rawMCP{tools: payTool}
	var mu sync.Mutex
	var params json.RawMessage
	s.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		okResult(w, id, "ok")
	}
	set, srv := startRaw(t, s, "")
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			mu.Lock()
			params = m.Params // the bytes as sent: Unmarshal copies a RawMessage verbatim
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.ServeHTTP(w, r)
	})
	const args = "{\"a\":\"<b>&c\u2028\u202e\",\"n\":1e+21,\"x\":[0.5,-3]}"
	if _, err := dispatch(set, "req-bytes-1", "bank", "pay", args); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(params, []byte(`"arguments":`+args)) {
		t.Fatalf("the upstream received params %s; want the arguments %s verbatim", params, args)
	}
}
