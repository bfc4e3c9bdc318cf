package mcptest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rpcPoster POSTs raw JSON-RPC bodies to an MCP endpoint, in the session
// the first initialize opened, and returns the status and the one
// JSON-RPC message answered (from a JSON body or the first SSE data line).
type rpcPoster struct {
	t       *testing.T
	url     string
	bearer  string
	session string
}

func (p *rpcPoster) post(body string) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.url, strings.NewReader(body))
	if p.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+p.bearer)
	}
	if p.session != "" {
		req.Header.Set("Mcp-Session-Id", p.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && p.session == "" {
		p.session = s
	}
	text := strings.TrimSpace(string(data))
	for _, line := range strings.Split(text, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && strings.TrimSpace(d) != "" {
			return resp.StatusCode, strings.TrimSpace(d)
		}
	}
	return resp.StatusCode, text
}

// open initializes a session in protocol version 2025-03-26 (one that
// takes batches).
func (p *rpcPoster) open() {
	p.t.Helper()
	if code, text := p.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26",` +
		`"capabilities":{},"clientInfo":{"name":"bigid-test","version":"1"}}}`); code != http.StatusOK || p.session == "" {
		p.t.Fatalf("initialize: %d %q", code, text)
	}
	if code, text := p.post(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`); code != http.StatusAccepted {
		p.t.Fatalf("initialized: %d %q", code, text)
	}
}

// RefusesRoundedIDs checks the MCP endpoint at url (with bearer, if
// any) as mcpgw's stdio transport is checked
// (TestStdioTransportRefusesIntegerIDsTheSDKRounds): the SDK reads a numeric id through a float64, so 9007199254740993 was
// answered as 9007199254740992, and the answer of one request could
// resolve another the client is waiting for. A message (alone or in a
// batch) with such an id is refused with a JSON-RPC invalid request, id
// null; an id the SDK reads exactly is answered with itself.
func RefusesRoundedIDs(t *testing.T, url, bearer string) {
	t.Helper()
	p := &rpcPoster{t: t, url: url, bearer: bearer}
	refused := func(body string) {
		t.Helper()
		code, text := p.post(body)
		var a struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if code != http.StatusBadRequest || json.Unmarshal([]byte(text), &a) != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != "null" {
			t.Errorf("%s was answered %d %q, want 400 with an invalid request, id null", body, code, text)
		}
	}
	// Before a session: an initialize whose id would be rounded opens none.
	for _, id := range []string{"9007199254740993", "9223372036854775807"} {
		refused(`{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":"2025-03-26",` +
			`"capabilities":{},"clientInfo":{"name":"bigid-test","version":"1"}}}`)
		if p.session != "" {
			t.Fatalf("an initialize with id %s opened a session", id)
		}
	}
	p.open()
	for _, id := range []string{"9007199254740993", "-9007199254740993", "9223372036854775807"} {
		refused(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		refused(`[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}]`)
	}
	for _, id := range []string{"9007199254740992", "-9007199254740992"} {
		if code, text := p.post(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`); code != http.StatusOK || text != `{"jsonrpc":"2.0","id":`+id+`,"result":{}}` {
			t.Errorf("a ping with id %s was answered %d %q", id, code, text)
		}
	}
}

// RefusesBatchReusingID checks that the MCP endpoint at url (with bearer,
// if any) refuses a batch (protocol versions before 2025-06-18) in which
// two requests share an id, as mcpgw's stdio transport does: the SDK
// answered one of them and dropped the other's answer, so the client
// got one answer for two requests and could not tell whose it was (both
// may have run). A batch whose ids differ (6 and "6") is answered.
func RefusesBatchReusingID(t *testing.T, url, bearer string) {
	t.Helper()
	p := &rpcPoster{t: t, url: url, bearer: bearer}
	p.open()
	for _, body := range []string{
		`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"tools/list"}]`,
		`[{"jsonrpc":"2.0","id":"a","method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"a","method":"ping"}]`,
	} {
		code, text := p.post(body)
		var a struct {
			ID    json.RawMessage
			Error *struct{ Code int }
		}
		if code != http.StatusBadRequest || json.Unmarshal([]byte(text), &a) != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != "null" {
			t.Errorf("%s was answered %d %q, want 400 with an invalid request, id null", body, code, text)
		}
	}
	if code, text := p.post(`[{"jsonrpc":"2.0","id":6,"method":"ping"},{"jsonrpc":"2.0","id":"6","method":"ping"}]`); code != http.StatusOK {
		t.Errorf("a batch with ids 6 and \"6\" was answered %d %q", code, text)
	}
}
