package mcpgw

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// stringIDsTheSDKRewrites are string ids the SDK reads as another string:
// it decodes an invalid UTF-8 byte and a lone surrogate escape alike as
// U+FFFD, so "a\xff" was answered as "a\uFFFD": an id the client never
// sent, or the id of another of its requests ("a\uFFFD" itself, or
// "a\xfe"), whose answer it then takes it for. Such an id is refused, on
// stdio and over HTTP, as an id the SDK rounds is.
var stringIDsTheSDKRewrites = []string{"\"a\xff\"", `"a\ud800"`, `"a\udc00b"`}

func invalidRequestNullID(answer string) bool {
	var a struct {
		ID    json.RawMessage
		Error *struct{ Code int }
	}
	return json.Unmarshal([]byte(answer), &a) == nil && a.Error != nil && a.Error.Code == -32600 && string(a.ID) == "null"
}

func TestStdioTransportRefusesStringIDsTheSDKRewrites(t *testing.T) {
	send := stdioSession(t, "2025-03-26")
	for _, id := range stringIDsTheSDKRewrites {
		for _, line := range []string{`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`,
			`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}]`} {
			if got := send(line); !invalidRequestNullID(got) {
				t.Errorf("%q was answered %q, want an invalid request with id null", line, got)
			}
		}
	}
	// Escapes that spell valid text are the same id, answered as the SDK
	// spells it.
	if got := send(`{"jsonrpc":"2.0","id":"a\u0041\ud83d\ude00","method":"ping"}`); got != `{"jsonrpc":"2.0","id":"aA😀","result":{}}` {
		t.Errorf("a ping with an escaped id was answered %q", got)
	}
}

func TestGatewayRefusesStringIDsTheSDKRewrites(t *testing.T) {
	w := newRawWorld(t, &rawUp{tools: benignPay}, "")
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range stringIDsTheSDKRewrites {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
			`"capabilities":{},"clientInfo":{"name":"stringid-test","version":"1"}}}`
		req, _ := http.NewRequest("POST", w.URL+Path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !invalidRequestNullID(string(data)) || resp.Header.Get(sessionIDHeader) != "" {
			t.Errorf("an initialize with id %q was answered %d %q (session %q), want 400 with an invalid request, id null, no session",
				id, resp.StatusCode, data, resp.Header.Get(sessionIDHeader))
		}
	}
}
