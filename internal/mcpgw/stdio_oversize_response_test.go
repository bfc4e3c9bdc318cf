package mcpgw

import (
	"encoding/json"
	"strings"
	"testing"
)

// A line over the bound is answered with its id only when it is a request
// (its first bytes show a method), as a line the SDK cannot take is
// (requestID): a client's over-long response to id 7 (the result of a
// request the server sent it) was answered with an error for id 7, which
// ends the client's own request 7 if it has one waiting. A request whose
// method shows is still answered with its id.
func TestStdioTransportAnswersAnOversizeResponseWithNoID(t *testing.T) {
	send := stdioSession(t, "2025-11-25")
	pad := strings.Repeat("x", MaxStdioLineBytes)
	for _, tc := range []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":7,"result":{"pad":"` + pad + `"}}`, "null"},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"` + pad + `"}}`, "null"},
		{`{"id":"r-8","jsonrpc":"2.0","result":{"content":[],"pad":"` + pad + `"}}`, "null"},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","arguments":{"pad":"` + pad + `"}}}`, "9"},
		{`{"method":"tools/call","jsonrpc":"2.0","id":"big-10","params":{"pad":"` + pad + `"}}`, `"big-10"`},
	} {
		var a struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if got := send(tc.line); json.Unmarshal([]byte(got), &a) != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != tc.id {
			t.Fatalf("%.60q… was answered %.200q, want an invalid request with id %s", tc.line, got, tc.id)
		}
	}
}
