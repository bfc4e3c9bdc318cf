package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// rawUp is a hand-written Streamable HTTP MCP upstream (not the go-sdk, so
// it can list and do what a go-sdk server would refuse to).
type rawUp struct {
	mu       sync.Mutex
	tools    string // JSON array for tools/list
	onCall   func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32)
	onGet    func(w http.ResponseWriter, r *http.Request)
	calls    atomic.Int32
	listChan chan struct{} // a send makes the standalone stream announce list_changed
}

func (s *rawUp) setTools(v string) { s.mu.Lock(); s.tools = v; s.mu.Unlock() }

func (s *rawUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		if s.onGet != nil {
			s.onGet(w, r)
			return
		}
		if s.listChan != nil && r.Header.Get("Last-Event-ID") == "" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for {
				select {
				case <-s.listChan:
					fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
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
	if m.ID == nil {
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
		s.mu.Lock()
		tools := s.tools
		s.mu.Unlock()
		reply(`{"tools":` + tools + `}`)
	case "ping":
		reply(`{}`)
	case "tools/call":
		s.onCall(w, r, m.ID, s.calls.Add(1))
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
	}
}

// rawWorld is a kernel on bbolt serving /mcp in front of one raw upstream
// "bank" whose every tool the agent is granted.
type rawWorld struct {
	*testkit.World
	router *dispatch.Router
	gw     atomic.Pointer[Gateway]
}

func newRawWorld(t *testing.T, up *rawUp, serverExtra string, wrap ...func(kernel.Store) kernel.Store) *rawWorld {
	t.Helper()
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	text := fmt.Sprintf(`
[[servers]]
id = "bank"
transport = "mcp"
url = %q
%s

[[grants]]
id = "bank"
server = "bank"
tool = "*"
`, srv.URL+"/mcp", serverExtra)
	p, err := policy.Parse([]byte(text), "delivery.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := &rawWorld{}
	w.router, err = dispatch.New(p.Servers, t.TempDir(), dispatch.WithMCP(mcp.Options{
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		OnToolsChanged: func(s string) {
			if g := w.gw.Load(); g != nil {
				g.ToolsChanged(s)
			}
		}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.router.Close() })
	var ws func(kernel.Store) kernel.Store
	if len(wrap) > 0 {
		ws = wrap[0]
	}
	w.World = testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: w.router, Grants: []string{"bank"}, Serve: true,
		WrapStore: ws,
		BeforeServe: func(tw *testkit.World) {
			g, err := New(Options{Kernel: tw.Kernel, Catalog: w.router.MCP()})
			if err != nil {
				t.Fatal(err)
			}
			w.gw.Store(g)
			tw.API.Handle(Path, g)
		}})
	u, _ := w.router.MCP().Upstream("bank")
	mcptest.Eventually(t, 20*time.Second, "the raw upstream", u.Ready)
	return w
}

func (w *rawWorld) bridge(t *testing.T) (*mcpsdk.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := NewBridge(ctx, BridgeOptions{URL: w.URL, Key: w.Agent, Capability: w.CapRaw})
	if err != nil {
		return nil, err
	}
	t.Cleanup(b.Close)
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "delivery-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, nil
}

const benignPay = `[{"name":"pay","inputSchema":{"type":"object","properties":{"amount":{"type":"integer"}}}}]`

// An inputSchema chio's catalogue accepts but the go-sdk's Server.AddTool
// panics on: compileTool decodes it into jsonschema.Schema, whose JSON
// decoding matches member names case-insensitively ("Type" reads as
// type:object), while AddTool (go-sdk server.go:334-339) reads m["type"]
// exactly and panics when it is not "object".
const evilPay = `[{"name":"pay","inputSchema":{"Type":"object","properties":{"amount":{"type":"integer"}}}}]`

// An upstream that changes a granted tool's schema to one the go-sdk's
// Server.AddTool panics on, while an agent is connected, cannot end chiod:
// the catalogue refuses the schema, and Gateway.ToolsChanged's sync (in its
// own goroutine) recovers should one slip through. Run in a child process
// so that a crash is observed rather than suffered.
func TestUpstreamSchemaCannotCrashGateway(t *testing.T) {
	if os.Getenv("CHIO_GATEWAY_CRASH_CHILD") == "1" {
		up := &rawUp{tools: benignPay, listChan: make(chan struct{}, 1),
			onCall: func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {}}
		w := newRawWorld(t, up, "")
		cs, err := w.bridge(t)
		if err != nil {
			t.Fatal(err)
		}
		_ = cs
		up.setTools(evilPay)
		up.listChan <- struct{}{} // notifications/tools/list_changed
		time.Sleep(3 * time.Second)
		fmt.Println("CHILD-SURVIVED")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUpstreamSchemaCannotCrashGateway$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CHIO_GATEWAY_CRASH_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CHILD-SURVIVED") {
		i := strings.Index(string(out), "panic:")
		tail := string(out)
		if i >= 0 {
			tail = tail[i:min(len(tail), i+600)]
		} else if len(tail) > 1500 {
			tail = tail[len(tail)-1500:]
		}
		t.Fatalf("the gateway process died after an upstream changed a tool's schema (%v):\n%s", err, tail)
	}
}

// A call whose tool ran but whose result chio refused (over
// MaxResultBytes: tool_error, null output) is not described to the agent
// as "not run" — a model told that calls again with a fresh request id and
// pays twice — and its _meta carries the execution.
func TestToolThatRanIsNotReportedNotRun(t *testing.T) {
	big := strings.Repeat("x", mcp.MaxResultBytes+1024)
	up := &rawUp{tools: benignPay, onCall: func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"paid %s"}]}}`, id, big)
	}}
	w := newRawWorld(t, up, "")
	cs, err := w.bridge(t)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "bank__pay", Arguments: map[string]any{"amount": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if up.calls.Load() != 1 {
		t.Fatalf("calls = %d", up.calls.Load())
	}
	text := r.Content[0].(*mcpsdk.TextContent).Text
	if strings.Contains(text, "could not be run") || strings.Contains(text, "did not run") {
		t.Fatalf("the upstream ran the call, yet the agent is told: %q (meta %v)", text, r.Meta)
	}
	if !r.IsError || r.Meta[MetaExecution] != kernel.ExecutionToolError {
		t.Fatalf("want an isError result with _meta[%q] = %q: %v", MetaExecution, kernel.ExecutionToolError, r.Meta)
	}
}

// End to end through the kernel: an at_most_once MCP tool whose upstream
// accepted the tools/call (200, an SSE stream with a resumable event id),
// ran it and restarted (the resume GET meets 404, ErrSessionMissing) is
// not re-sent: the call reaches the upstream once.
func TestAtMostOnceMCPToolRunsOnceWhenSessionLostOnResume(t *testing.T) {
	up := &rawUp{tools: benignPay}
	up.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		if n == 1 {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", "raw-session")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "id: ev-1\nevent: prime\ndata:\n\n")
			w.(http.Flusher).Flush()
			return // ran the payment, then "restarted"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"paid"}]}}`, id)
	}
	up.onGet = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Last-Event-ID") != "" {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
	}
	w := newRawWorld(t, up, `delivery = "at_most_once"`)
	out := w.SubmitCall(t, w.CallAs(t, w.Agent, w.CapRaw, "bank", "pay", `{"amount":5}`, ""))
	deadline := time.Now().Add(20 * time.Second)
	for kernel.InFlight(out.Status) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		rec, err := w.Kernel.Call(out.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		out = kernel.OutcomeOf(rec)
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("an at_most_once call reached the upstream %d times; recorded as %s/%s %q", n, out.Status, out.Execution, out.ToolError)
	}
}

// failingStore fails every Update while fail is set (a full disk).
type failingStore struct {
	kernel.Store
	fail atomic.Bool
}

func (f *failingStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if f.fail.Load() {
		return fmt.Errorf("%w: no space left on device", kernel.ErrUnavailable)
	}
	return f.Store.Update(ctx, fn)
}

// When the tool has run but its settlement cannot be committed (the store
// fails), the gateway must not invite a retry: an MCP client's retry is a
// new request id and the tool would run again. It answers an isError
// result naming the request id to chio_await instead.
func TestUnrecordedOutcomeSaysAwaitNotRetry(t *testing.T) {
	fs := &failingStore{}
	up := &rawUp{tools: benignPay}
	up.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		if n == 1 {
			fs.fail.Store(true) // the disk fills while the tool runs
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"paid"}]}}`, id)
	}
	w := newRawWorld(t, up, `delivery = "at_most_once"`, func(s kernel.Store) kernel.Store { fs.Store = s; return fs })
	cs, err := w.bridge(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "bank__pay", Arguments: map[string]any{"amount": 5}})
	fs.fail.Store(false)
	if up.calls.Load() != 1 {
		t.Fatalf("calls = %d", up.calls.Load())
	}
	if err != nil && strings.Contains(err.Error(), "retry") {
		// Do what the agent was told: the payment runs again.
		_, _ = cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "bank__pay", Arguments: map[string]any{"amount": 5}})
		t.Fatalf("the tool ran, yet the agent was told %q and gets no request id to await; retrying as told ran the tool %d times",
			err, up.calls.Load())
	}
	if err != nil {
		t.Fatal(err)
	}
	text := r.Content[0].(*mcpsdk.TextContent).Text
	id, _ := r.Meta[MetaRequestID].(string)
	if !r.IsError || r.Meta[MetaStatus] != StatusUnrecorded || id == "" || !strings.Contains(text, AwaitTool) ||
		!strings.Contains(text, "do not call it again") {
		t.Fatalf("want an isError result naming the request id to await: %q %v", text, r.Meta)
	}
	// chio_await knows the call (its outcome is recorded once the store
	// heals and recovery runs).
	aw, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: AwaitTool, Arguments: map[string]any{"id": id, "wait_seconds": 0}})
	if err != nil {
		t.Fatal(err)
	}
	if aw.Meta[MetaRequestID] != id {
		t.Fatalf("chio_await %s = %q (meta %v)", id, aw.Content[0].(*mcpsdk.TextContent).Text, aw.Meta)
	}
	if up.calls.Load() != 1 {
		t.Fatalf("calls = %d", up.calls.Load())
	}
}
