package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// rawMCP is a minimal Streamable HTTP MCP server written by hand (not with
// the go-sdk), so a test controls every byte and every connection: what a
// real upstream, or a proxy in front of one, may do.
type rawMCP struct {
	tools  string // the JSON array tools/list answers
	onCall func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32)
	onGet  func(w http.ResponseWriter, r *http.Request)
	calls  atomic.Int32 // tools/call requests that reached the server
}

func (s *rawMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		if s.onGet != nil {
			s.onGet(w, r)
			return
		}
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if m.ID == nil { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "raw-session")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		reply(fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"raw","version":"1"}}`, p.ProtocolVersion))
	case "tools/list":
		reply(`{"tools":` + s.tools + `}`)
	case "ping":
		reply(`{}`)
	case "tools/call":
		n := s.calls.Add(1)
		s.onCall(w, r, m.ID, n)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
	}
}

func okResult(w http.ResponseWriter, id json.RawMessage, text string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
}

const payTool = `[{"name":"pay","inputSchema":{"type":"object"}}]`

func startRaw(t *testing.T, s *rawMCP, delivery string) (*Set, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	set := startSet(t, fastOptions(), policy.Server{ID: "bank", URL: srv.URL + "/mcp", Delivery: delivery})
	return set, srv
}

// A tools/call POST whose (reused) connection dies after the upstream read
// it must not be re-POSTed by net/http (the Idempotency-Key header alone
// would make the Transport treat it as replayable): Dispatch makes exactly
// one attempt, an at_most_once tool is never sent twice, and the failure
// is "may have run", not a success or "not delivered".
func TestToolsCallIsNeverResentByNetHTTP(t *testing.T) {
	s := &rawMCP{tools: payTool}
	s.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		if n == 1 {
			// The upstream read the call and performed it; the connection
			// then dies before any response byte (a crash, an LB reset).
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			c.Close()
			return
		}
		okResult(w, id, "paid")
	}
	set, _ := startRaw(t, s, kernel.AtMostOnce)
	res, err := dispatch(set, "req-pay-1", "bank", "pay", `{"amount":100}`)
	if got := s.calls.Load(); got != 1 {
		t.Fatalf("one Dispatch sent tools/call %d times to the upstream (result %s / %q, err %v)", got, res.Output, res.ToolError, err)
	}
	var de *kernel.DeliveryError
	if !errors.As(err, &de) || de.NotDelivered {
		t.Fatalf("a call the upstream read must be 'may have run': %v", err)
	}
}

// A session lost after the tools/call POST was accepted (200, an SSE
// stream; the 404 comes on the GET that resumes the interrupted stream,
// after the upstream restarted having run the tool) is "may have run", not
// "not delivered" (which the kernel re-sends even under at_most_once).
func TestSessionLostAfterAcceptedCallMayHaveRun(t *testing.T) {
	s := &rawMCP{tools: payTool}
	s.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		// Accept the call on an SSE stream with a resumable event id, run
		// it, and die before answering.
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "raw-session")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "id: ev-1\nevent: prime\ndata:\n\n")
		w.(http.Flusher).Flush()
	}
	// After the restart the upstream no longer knows the session.
	s.onGet = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Last-Event-ID") != "" {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
	}
	set, _ := startRaw(t, s, kernel.AtMostOnce)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := set.Dispatch(ctx, kernel.DispatchRequest{RequestID: "req-pay-2", Server: "bank", Tool: "pay",
		Arguments: json.RawMessage(`{"amount":100}`), Attempt: 1})
	if s.calls.Load() != 1 {
		t.Fatalf("tools/call reached the upstream %d times", s.calls.Load())
	}
	var de *kernel.DeliveryError
	if !errors.As(err, &de) {
		t.Fatalf("want a DeliveryError, got %v", err)
	}
	if de.NotDelivered {
		t.Fatalf("the upstream accepted (200) and ran the call, but Dispatch says NotDelivered: %v", err)
	}
}

// What the status of the tools/call POST itself tells the kernel: only a
// status by which a server refuses a request before acting on it is "not
// delivered" (which the kernel re-sends even under at_most_once). A 503
// may come from a proxy whose backend dropped a call it had started.
func TestToolsCallStatusDecidesNotDelivered(t *testing.T) {
	tests := []struct {
		status           int
		notDelivered     bool
		retryable        bool
		sessionForgotten bool
	}{
		{status: http.StatusNotFound, notDelivered: true, retryable: true, sessionForgotten: true},
		{status: http.StatusTooManyRequests, notDelivered: true, retryable: true},
		{status: http.StatusForbidden, notDelivered: true},
		{status: http.StatusServiceUnavailable, retryable: true},
		{status: http.StatusBadGateway, retryable: true},
		{status: http.StatusInternalServerError, retryable: true},
		{status: http.StatusConflict},
		{status: http.StatusUnprocessableEntity},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			s := &rawMCP{tools: payTool}
			s.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
				http.Error(w, "no", tc.status)
			}
			set, _ := startRaw(t, s, kernel.AtMostOnce)
			_, err := dispatch(set, "req-status", "bank", "pay", `{"amount":1}`)
			var de *kernel.DeliveryError
			if !errors.As(err, &de) {
				t.Fatalf("want a DeliveryError, got %v", err)
			}
			if de.NotDelivered != tc.notDelivered || de.Retryable != tc.retryable {
				t.Fatalf("%d: NotDelivered=%v Retryable=%v, want %v %v (%v)", tc.status, de.NotDelivered, de.Retryable,
					tc.notDelivered, tc.retryable, err)
			}
			if got := errors.Is(err, mcpsdk.ErrSessionMissing); got != tc.sessionForgotten {
				t.Fatalf("ErrSessionMissing = %v: %v", got, err)
			}
		})
	}
}
