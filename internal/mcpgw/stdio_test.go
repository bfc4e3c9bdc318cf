package mcpgw

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioSession serves a plain MCP server over StdioTransport on pipes,
// initialized with protocol version; it returns a function that sends one
// line and returns the next line written back.
func stdioSession(t *testing.T, version string) func(line string) string {
	t.Helper()
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "stdio-test", Version: "1"}, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, StdioTransport(inR, outW)); outW.Close() }()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	roundTrip := func(line string) string {
		t.Helper()
		go inW.Write([]byte(line + "\n"))
		select {
		case l, ok := <-lines:
			if !ok {
				err := <-done
				done <- err // for the cleanup
				t.Fatalf("after %.80q: the session ended: %v", line, err)
			}
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("after %.80q: no answer", line)
		}
		return ""
	}
	roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, version))
	go inW.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n\n  \r\n"))
	return roundTrip
}

// In a protocol version with batches (before 2025-06-18) a batch the SDK
// takes is passed on and answered as a batch; one it would end the
// session on is answered with an error. A line over the bound is answered
// too (id null: its id comes after what is read of it), and the session
// goes on.
func TestStdioTransportBatchesAndOversizeLines(t *testing.T) {
	send := stdioSession(t, "2025-03-26")
	if got := send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`); !strings.HasPrefix(got, "[") ||
		!strings.Contains(got, `"id":2`) || !strings.Contains(got, `"id":3`) {
		t.Fatalf("a batch in 2025-03-26 was answered %q, want a batch of two answers", got)
	}
	for _, bad := range []string{`[]`, `[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":5,"method":"ping"},"x"]`, strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
		`{"jsonrpc":"2.0","method":"ping","params":{"pad":"` + strings.Repeat("x", MaxStdioLineBytes) + `"},"id":6}`} {
		var a struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if got := send(bad); json.Unmarshal([]byte(got), &a) != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != "null" {
			t.Fatalf("%.80q was answered %.200q, want an invalid request with id null", bad, got)
		}
		if got := send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`); got != `{"jsonrpc":"2.0","id":9,"result":{}}` {
			t.Fatalf("after %.80q a ping was answered %q", bad, got)
		}
	}
}

// The SDK reads a JSON-RPC id that is a number as an int64, and answered a
// request with id 9.5 with id 9 (1e20 with whatever the conversion made
// of it): the answer of one request resolved another the client was
// waiting for. An id that is not a string or an integer is refused.
func TestStdioTransportRefusesIDsItWouldAnswerAsAnother(t *testing.T) {
	send := stdioSession(t, "2025-11-25")
	for _, id := range []string{"9.5", "1e20", "-0.5"} {
		line := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`
		var a struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if got := send(line); json.Unmarshal([]byte(got), &a) != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != "null" {
			t.Fatalf("%s was answered %q, want an invalid request with id null", line, got)
		}
	}
	if got := send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`); got != `{"jsonrpc":"2.0","id":9,"result":{}}` {
		t.Fatalf("a ping with id 9 was answered %q", got)
	}
}

// A request over the line bound is answered with its id when the line's
// first bytes show it, so the client's call ends instead of waiting for
// an answer that never comes.
func TestStdioTransportAnswersAnOversizeRequestWithItsID(t *testing.T) {
	send := stdioSession(t, "2025-11-25")
	line := `{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"name":"x","arguments":{"pad":"` +
		strings.Repeat("x", MaxStdioLineBytes) + `"}}}`
	var a struct {
		ID    json.RawMessage
		Error *struct{ Code int }
	}
	if got := send(line); json.Unmarshal([]byte(got), &a) != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != `"big-1"` {
		t.Fatalf("an oversize request was answered %.200q, want an invalid request with its id \"big-1\"", got)
	}
}

// The id check read the whole message strictly (go-json-experiment's
// defaults), which refuses what the SDK takes: a member named twice
// anywhere in it, or a string that is not valid UTF-8. Such a message
// slipped past the check, and its id 9.5 was answered as id 9.
func TestStdioTransportRefusesOtherIDsBesideWhatTheSDKTakes(t *testing.T) {
	send := stdioSession(t, "2025-11-25")
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":9.5,"method":"ping","params":{"_meta":{"a":1,"a":2}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":9.5,\"method\":\"ping\",\"params\":{\"_meta\":{\"a\":\"\xff\"}}}",
	} {
		var a struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if got := send(line); json.Unmarshal([]byte(got), &a) != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != "null" {
			t.Fatalf("%q was answered %q, want an invalid request with id null", line, got)
		}
	}
}

// A line the SDK cannot take is answered with its id only when its
// members are named as JSON-RPC names them: {"METHOD":…,"ID":5} has no
// id, and an answer to id 5 would end another request the client may be
// waiting for.
func TestStdioTransportReadsAnUnusableRequestsIDByItsExactName(t *testing.T) {
	send := stdioSession(t, "2025-11-25")
	for _, line := range []string{`{"jsonrpc":"2.0","METHOD":"ping","ID":5}`, `{"jsonrpc":"1.0","Method":"ping","Id":5}`} {
		var a struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if got := send(line); json.Unmarshal([]byte(got), &a) != nil || a.Error == nil || string(a.ID) != "null" {
			t.Fatalf("%s was answered %q, want an error with id null", line, got)
		}
	}
}
