package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// httpToolServer is a chio "http" tool server: it records each POST and
// answers {"found": <arguments>}.
type httpToolServer struct {
	mu    sync.Mutex
	calls []httpToolCall
}

type httpToolCall struct {
	Key  string
	Tool string
	Args json.RawMessage
}

func (s *httpToolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, httpToolCall{Key: r.Header.Get("Idempotency-Key"), Tool: req.Tool, Args: req.Arguments})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"found":%s}`, req.Arguments)
}

func (s *httpToolServer) recorded() []httpToolCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// policyToolsWorld is a kernel on bbolt serving /mcp, with the builtin
// demo server, an HTTP tool server and, when extra declares one, MCP
// upstreams.
type policyToolsWorld struct {
	*testkit.World
	router   *dispatch.Router
	gw       *Gateway
	dataDir  string
	approver keys.PrivateKey
}

// alwaysApprovedRefunds: demo's issue_refund always needs the approval of
// one approver (%s), asked through poll.
const alwaysApprovedRefunds = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
channels = ["poll"]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Approver"
`

func newPolicyToolsWorld(t *testing.T, text string, grants []string) *policyToolsWorld {
	t.Helper()
	p, err := policy.Parse([]byte(text), "policytools.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := &policyToolsWorld{dataDir: t.TempDir()}
	if w.router, err = dispatch.New(p.Servers, w.dataDir, dispatch.WithMCP(mcp.Options{})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.router.Close() })
	w.World = testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: w.router, Grants: grants, Serve: true,
		BeforeServe: func(tw *testkit.World) {
			g, err := New(Options{Kernel: tw.Kernel, Catalog: w.router.MCP()})
			if err != nil {
				t.Fatal(err)
			}
			tw.API.Handle(Path, g)
			w.gw = g
		}})
	for _, id := range w.router.MCP().Servers() {
		u, _ := w.router.MCP().Upstream(id)
		mcptest.Eventually(t, 20*time.Second, "upstream "+id, u.Ready)
	}
	return w
}

// bridge connects a go-sdk client to a Bridge for w's agent that asks
// chiod not to hold parked calls open (a zero pending wait).
func (w *policyToolsWorld) bridge(t *testing.T) *mcpsdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := NewBridge(ctx, BridgeOptions{URL: w.URL, Key: w.Agent, Capability: w.CapRaw, PendingWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := b.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "policytools-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listedTools(t *testing.T, cs *mcpsdk.ClientSession) map[string]*mcpsdk.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcpsdk.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func sortedNames(m map[string]*mcpsdk.Tool) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func callTool(t *testing.T, cs *mcpsdk.ClientSession, name string, args any) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return r
}

func resultText(r *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Every tool the capability grants is offered over MCP, whatever its
// server's transport: the builtin demo tools and a declared HTTP tool, as
// for an upstream MCP server's tools. Each call takes the kernel's path —
// proof, guards, approvals, receipts — and answers as an MCP tool's would.
func TestGrantedBuiltinAndHTTPToolsAreOfferedAndCallable(t *testing.T) {
	tools := &httpToolServer{}
	toolSrv := httptest.NewServer(tools)
	t.Cleanup(toolSrv.Close)
	approver, _ := keys.Generate(nil)
	text := fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"

[[servers]]
id = "web"
transport = "http"
url = %q

[[servers.tools]]
name = "lookup"

[[servers.tools]]
name = "purge"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"

[[grants]]
id = "files"
server = "demo"
tool = "delete_file"
[grants.constraints]
forbidden_paths = ["/etc/**"]

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
channels = ["poll"]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Approver"

[[grants]]
id = "web"
server = "web"
tool = "look*"

[[grants]]
id = "purge"
server = "web"
tool = "purge"
`, toolSrv.URL, approver.Public())
	// "purge" is declared but not granted to this agent; confirm and ask
	// are builtin verbs no grant covers.
	w := newPolicyToolsWorld(t, text, []string{"echo", "files", "refunds", "web"})
	w.approver = approver
	cs := w.bridge(t)

	offered := listedTools(t, cs)
	want := []string{AwaitTool, "demo__delete_file", "demo__echo", "demo__issue_refund", "web__lookup"}
	if got := sortedNames(offered); !slices.Equal(got, want) {
		t.Errorf("tools/list offers %v; want %v", got, want)
	}
	if tool := offered["demo__issue_refund"]; tool != nil {
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"customer_id"`) || tool.Meta[MetaServer] != "demo" || tool.Meta[MetaTool] != "issue_refund" {
			t.Errorf("demo__issue_refund: schema %s, _meta %v", schema, tool.Meta)
		}
	}
	if tool := offered["web__lookup"]; tool != nil {
		if schema, _ := json.Marshal(tool.InputSchema); string(schema) != `{"type":"object"}` {
			t.Errorf("web__lookup declares no schema, so it is offered with a permissive one; got %s", schema)
		}
	}

	// Allowed: the builtin tool's output, as text.
	r := callTool(t, cs, "demo__echo", map[string]any{"hello": "mcp"})
	if r.IsError || resultText(r) != `{"echo":{"hello":"mcp"}}` {
		t.Fatalf("demo__echo: isError %v, %q, _meta %v", r.IsError, resultText(r), r.Meta)
	}
	// Allowed with an effect: the sandbox file is gone.
	todo := filepath.Join(w.dataDir, "builtin", "sandbox", "notes", "todo.txt")
	if _, err := os.Stat(todo); err != nil {
		t.Fatal(err)
	}
	r = callTool(t, cs, "demo__delete_file", map[string]any{"path": "notes/todo.txt"})
	if _, err := os.Stat(todo); r.IsError || !os.IsNotExist(err) {
		t.Fatalf("demo__delete_file: isError %v %q; file: %v", r.IsError, resultText(r), err)
	}
	// Denied by a guard, with a signed receipt naming the server and tool.
	r = callTool(t, cs, "demo__delete_file", map[string]any{"path": "/etc/passwd"})
	receiptID, _ := r.Meta[MetaReceiptID].(string)
	if !r.IsError || r.Meta[MetaStatus] != kernel.StatusDenied || r.Meta[MetaGuard] != "forbidden_paths" || !strings.HasPrefix(receiptID, "rc-") {
		t.Fatalf("denied delete: %v %q", r.Meta, resultText(r))
	}
	if rc := w.Receipt(t, receiptID); rc.ToolServer != "demo" || rc.ToolName != "delete_file" || rc.Decision.Verdict != "deny" {
		t.Fatalf("receipt: %s/%s %s", rc.ToolServer, rc.ToolName, rc.Decision.Verdict)
	}
	// An HTTP tool: one POST to its server, keyed by the bridge's request id.
	r = callTool(t, cs, "web__lookup", map[string]any{"q": "chio"})
	calls := tools.recorded()
	if r.IsError || resultText(r) != `{"found":{"q":"chio"}}` || len(calls) != 1 || calls[0].Tool != "lookup" ||
		!strings.HasPrefix(calls[0].Key, "mcp-") {
		t.Fatalf("web__lookup: isError %v %q; tool server saw %+v", r.IsError, resultText(r), calls)
	}
	// Parked for a human, approved, and fetched with chio_await.
	r = callTool(t, cs, "demo__issue_refund", map[string]any{"customer_id": "cust-1", "amount": 5, "currency": "USD"})
	approvalID, _ := r.Meta[MetaApprovalID].(string)
	if !r.IsError || r.Meta[MetaStatus] != kernel.StatusPendingApproval || !strings.HasPrefix(approvalID, "ar-") {
		t.Fatalf("refund: %v %q", r.Meta, resultText(r))
	}
	tok := w.Token(t, approvalID, w.approver, approval.DecisionApproved, nil)
	if _, err := w.Kernel.Respond(context.Background(), approvalID, tok, "", ""); err != nil {
		t.Fatal(err)
	}
	r = callTool(t, cs, AwaitTool, map[string]any{"id": approvalID, "wait_seconds": 30})
	if r.IsError || !strings.Contains(resultText(r), `"status":"issued"`) {
		t.Fatalf("await refund: isError %v %q %v", r.IsError, resultText(r), r.Meta)
	}
	// Not granted: neither offered nor callable.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "web__purge", Arguments: map[string]any{}}); err == nil && !r.IsError {
		t.Fatalf("an ungranted tool was called: %q", resultText(r))
	}
	if n := len(tools.recorded()); n != 1 {
		t.Fatalf("the tool server saw %d calls; want 1", n)
	}
}

// Exposed names stay collision-safe across transports: MCP server "a"'s
// tool "b__echo" and builtin server "a__b"'s echo are both "a__b__echo",
// so neither is offered; the builtin server's other tools are.
func TestCollidingNamesAcrossTransportsAreNotOffered(t *testing.T) {
	up := &rawUp{tools: `[{"name":"b__echo","inputSchema":{"type":"object"}}]`,
		onCall: func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
			t.Error("no tool should be called")
		}}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	text := fmt.Sprintf(`
[[servers]]
id = "a"
transport = "mcp"
url = %q

[[servers]]
id = "a__b"
transport = "builtin"

[[grants]]
id = "a"
server = "a"
tool = "*"

[[grants]]
id = "ab"
server = "a__b"
tool = "[de]*"
`, srv.URL+"/mcp")
	w := newPolicyToolsWorld(t, text, []string{"a", "ab"})
	cs := w.bridge(t)
	offered := listedTools(t, cs)
	if got, want := sortedNames(offered), []string{"a__b__delete_file", AwaitTool}; !slices.Equal(got, want) {
		t.Fatalf("tools/list offers %v; want %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "a__b__echo", Arguments: map[string]any{}}); err == nil && !r.IsError {
		t.Fatalf("a call to the colliding name was answered: %q", resultText(r))
	}
}
