package mcpgw

import (
	"encoding/json"
	"testing"
)

// The SDK reads a JSON-RPC id that is a number as a float64, then an
// int64: an integer beyond 2^53 loses its last digits on the way (the
// id 9007199254740993 was answered as id 9007199254740992, int64's
// largest as its smallest), and the answer of one request resolved
// another the client may be waiting for. Such an id is refused, as 9.5
// is; an integer the SDK reads exactly is answered with itself.
func TestStdioTransportRefusesIntegerIDsTheSDKRounds(t *testing.T) {
	send := stdioSession(t, "2025-11-25")
	for _, id := range []string{"9007199254740993", "-9007199254740993", "9223372036854775807"} {
		line := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`
		var a struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if got := send(line); json.Unmarshal([]byte(got), &a) != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != "null" {
			t.Fatalf("%s was answered %q, want an invalid request with id null", line, got)
		}
	}
	for _, id := range []string{"9007199254740992", "9007199254740994", "-9007199254740992"} {
		if got := send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`); got != `{"jsonrpc":"2.0","id":`+id+`,"result":{}}` {
			t.Fatalf("a ping with id %s was answered %q", id, got)
		}
	}
}
