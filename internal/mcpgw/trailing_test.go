package mcpgw

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A POST /mcp body is one JSON-RPC message. The SDK's decoder reads the
// first JSON value and ignores whatever follows it, so a body with
// trailing data (garbage, or a second message that is never answered) was
// served as if it ended after its first value: an initialize opened a
// session. It is refused with a 400 saying so, and nothing is opened.
func TestMCPBodyWithTrailingDataIsRefused(t *testing.T) {
	w := newRawWorld(t, &rawUp{tools: benignPay}, "")
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"trailing-test","version":"1"}}}`
	post := func(body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", w.URL+Path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	for _, body := range []string{initialize + " x", initialize + initialize, initialize + "\n]"} {
		resp, text := post(body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(text, "trailing data") || resp.Header.Get(sessionIDHeader) != "" {
			t.Errorf("POST %.60q…: %d %q (session %q); want 400 naming the trailing data, no session",
				body[len(body)-10:], resp.StatusCode, text, resp.Header.Get(sessionIDHeader))
		}
	}
	g := w.gw.Load()
	if n := g.sessions.count(agentIDOf(t, g, bearer)); n != 0 {
		t.Errorf("%d sessions open after refused bodies; want 0", n)
	}
	// One message, with white space after it, opens a session.
	if resp, text := post(initialize + "\r\n "); resp.StatusCode != http.StatusOK || resp.Header.Get(sessionIDHeader) == "" {
		t.Fatalf("one initialize: %d %q", resp.StatusCode, text)
	}
}

// agentIDOf is the id the gateway counts bearer's sessions under.
func agentIDOf(t *testing.T, g *Gateway, bearer string) string {
	t.Helper()
	a, err := verifySession(bearer, g.o.Kernel.PublicKey(), g.trusted(), g.o.Kernel.Clock().Now())
	if err != nil {
		t.Fatal(err)
	}
	return a.id()
}
