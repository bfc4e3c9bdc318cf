package mcpgw

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// POST /mcp goes to the same SDK as `chio mcp serve`'s stdin, which reads
// a JSON-RPC id that is a number as a float64, then an int64: 9.5 was
// answered as id 9, 9007199254740993 as 9007199254740992, int64's largest
// as its smallest, so the answer of one request resolved another the
// client may be waiting for. chio mcp serve refuses such ids (7af65a1,
// stdio_bigid_test.go); the HTTP gateway answered them as other ids. It
// refuses them (400, nothing served); an integer the SDK reads exactly is
// answered with itself.
func TestHTTPGatewayRefusesIDsTheSDKRounds(t *testing.T) {
	w := newRawWorld(t, &rawUp{tools: benignPay}, "")
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	session := ""
	post := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", w.URL+Path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(sessionIDHeader, session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if session == "" {
			session = resp.Header.Get(sessionIDHeader)
		}
		return resp.StatusCode, string(data)
	}
	if code, text := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"rounded-id-test","version":"1"}}}`); code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %q", code, text)
	}
	if code, text := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", code, text)
	}
	for _, id := range []string{"9007199254740993", "-9007199254740993", "9223372036854775807", "9.5"} {
		code, text := post(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if code != http.StatusBadRequest || !strings.Contains(text, "id") || strings.Contains(text, "result") {
			t.Errorf("a ping with id %s was answered %d %q; want 400 refusing its id", id, code, text)
		}
	}
	for _, id := range []string{"9007199254740992", "-9007199254740992", "7"} {
		if code, text := post(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`); code != http.StatusOK ||
			!strings.Contains(text, `{"jsonrpc":"2.0","id":`+id+`,"result":{}}`) {
			t.Errorf("a ping with id %s was answered %d %q", id, code, text)
		}
	}
}
