package mcpgw

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

// mcpPost sends one POST /mcp with bearer (and session id sid, if any) and
// returns the status, the Mcp-Session-Id answered and the body.
func mcpPost(t *testing.T, url, bearer, sid, body string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	if sid != "" {
		req.Header.Set(sessionIDHeader, sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(sessionIDHeader), data
}

// openMCPSession opens a session with an initialize POST and returns its
// id; it fails the test unless the session opened.
func openMCPSession(t *testing.T, url, bearer string) string {
	t.Helper()
	status, sid, body := mcpPost(t, url, bearer, "", initializeBody)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q (session %q)", status, body, sid)
	}
	return sid
}

// wantSessionRefused checks a refused initialize: status, and a JSON-RPC
// error body saying why.
func wantSessionRefused(t *testing.T, status int, body []byte, wantStatus int, why string) {
	t.Helper()
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if status != wantStatus || json.Unmarshal(body, &m) != nil || m.JSONRPC != "2.0" || string(m.ID) != "null" ||
		m.Error.Code != codeSessionLimit || !strings.Contains(m.Error.Message, why) {
		t.Fatalf("want %d with a JSON-RPC error saying %q, got %d %s", wantStatus, why, status, body)
	}
}

// liveSessions counts the MCP sessions the SDK holds for all agents.
func liveSessions(g *Gateway) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var live int
	for _, as := range g.agents {
		for range as.srv.Sessions() {
			live++
		}
	}
	return live
}

// One agent, one session bearer, looping on initialize (no tool call, no
// receipt, nothing parked): each session would outlive its request by
// SessionIdle with its own goroutines and buffers. Past
// DefaultMaxSessionsPerAgent the agent is refused, 429 with a JSON-RPC
// error, and holds no more sessions.
func TestAgentMCPSessionsAreBounded(t *testing.T) {
	up := &rawUp{tools: benignPay}
	w := newRawWorld(t, up, "")
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
	g0 := runtime.NumGoroutine()
	const n = 500
	opened, refused := 0, 0
	for range n {
		status, sid, body := mcpPost(t, w.URL, bearer, "", initializeBody)
		if status == http.StatusOK && sid != "" {
			opened++
			continue
		}
		wantSessionRefused(t, status, body, http.StatusTooManyRequests, "open MCP sessions")
		refused++
	}
	http.DefaultClient.CloseIdleConnections() // no connection is held open by the client
	time.Sleep(300 * time.Millisecond)
	g1 := runtime.NumGoroutine()
	live := liveSessions(w.gw.Load())
	t.Logf("%d initialize requests: %d opened, %d refused, %d live MCP sessions, goroutines %d -> %d (+%d)",
		n, opened, refused, live, g0, g1, g1-g0)
	if live > DefaultMaxSessionsPerAgent || opened > DefaultMaxSessionsPerAgent {
		t.Fatalf("one agent holds %d live MCP sessions (%d opened) after %d initialize calls and no open "+
			"connection: sessions per agent are unbounded and each lives SessionIdle (%v)", live, opened, n, SessionIdle)
	}
	if opened != DefaultMaxSessionsPerAgent || refused != n-opened {
		t.Fatalf("opened %d, refused %d: want %d opened, the rest refused", opened, refused, DefaultMaxSessionsPerAgent)
	}
}

// sessionGateway serves w's catalogue through a gateway with the given
// session limits.
func sessionGateway(t *testing.T, w *rawWorld, o Options) (*Gateway, string) {
	t.Helper()
	o.Kernel, o.Catalog = w.Kernel, w.router.MCP()
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv.URL
}

// A session's place is given back when the session ends, however it ends:
// the client's DELETE, the idle timeout, or the gateway closing it. A POST
// that opens no session that outlives it (not an initialize) takes no
// place. A full agent does not stop another agent.
func TestEndedMCPSessionsGiveTheirPlaceBack(t *testing.T) {
	up := &rawUp{tools: benignPay}
	w := newRawWorld(t, up, "")
	aud := w.Kernel.PublicKey().String()
	bearer, err := SignSession(w.Agent, w.CapRaw, aud, time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 3
	full := func(t *testing.T, url string) {
		t.Helper()
		status, _, body := mcpPost(t, url, bearer, "", initializeBody)
		wantSessionRefused(t, status, body, http.StatusTooManyRequests, "open MCP sessions")
	}
	// reopens waits until the agent, full, may open a session again.
	reopens := func(t *testing.T, url string) {
		t.Helper()
		mcptest.Eventually(t, 5*time.Second, "a place given back", func() bool {
			status, _, _ := mcpPost(t, url, bearer, "", initializeBody)
			return status == http.StatusOK
		})
	}

	t.Run("DELETE", func(t *testing.T) {
		_, url := sessionGateway(t, w, Options{MaxSessionsPerAgent: limit})
		var sids []string
		for range limit {
			sids = append(sids, openMCPSession(t, url, bearer))
		}
		full(t, url)
		req, _ := http.NewRequest(http.MethodDelete, url+Path, nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set(sessionIDHeader, sids[0])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d", resp.StatusCode)
		}
		reopens(t, url)
		full(t, url)
	})

	t.Run("idle timeout", func(t *testing.T) {
		_, url := sessionGateway(t, w, Options{MaxSessionsPerAgent: limit, SessionIdle: 300 * time.Millisecond})
		for range limit {
			openMCPSession(t, url, bearer)
		}
		full(t, url)
		reopens(t, url)
	})

	t.Run("closed by the gateway", func(t *testing.T) {
		g, url := sessionGateway(t, w, Options{MaxSessionsPerAgent: limit})
		for range limit {
			openMCPSession(t, url, bearer)
		}
		full(t, url)
		g.mu.Lock()
		for _, as := range g.agents {
			for ss := range as.srv.Sessions() {
				go ss.Close()
				break
			}
		}
		g.mu.Unlock()
		reopens(t, url)
		full(t, url)
	})

	t.Run("no session outlives the request", func(t *testing.T) {
		g, url := sessionGateway(t, w, Options{MaxSessionsPerAgent: limit})
		for range 3 * limit {
			// A request with no session opens one that the SDK closes
			// before answering, since it is not initialized.
			mcpPost(t, url, bearer, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
		}
		for range limit {
			openMCPSession(t, url, bearer)
		}
		full(t, url)
		if live := liveSessions(g); live != limit {
			t.Fatalf("%d live sessions, want %d", live, limit)
		}
	})

	t.Run("per agent and in all", func(t *testing.T) {
		g, url := sessionGateway(t, w, Options{MaxSessionsPerAgent: limit, MaxSessions: limit + 1})
		for range limit {
			openMCPSession(t, url, bearer)
		}
		full(t, url)
		otherCap, _, err := w.Kernel.IssueCapability(w.Agent.Public(), []string{"bank"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		other, err := SignSession(w.Agent, otherCap, aud, time.Now(), 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		openMCPSession(t, url, other) // another agent (capability) has its own places
		status, _, body := mcpPost(t, url, other, "", initializeBody)
		wantSessionRefused(t, status, body, http.StatusServiceUnavailable, "retry later")
		if live := liveSessions(g); live != limit+1 {
			t.Fatalf("%d live sessions, want %d", live, limit+1)
		}
	})
}
