package mcpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/policy"
)

// Tool naming. An agent sees "<server>__<tool>": server ids and tool names
// may both contain dots and dashes, and many model APIs allow only
// [A-Za-z0-9_-] in tool names, so the separator is a double underscore and
// the pair is looked up, never parsed.
const nameSep = "__"

// Metadata members on tools chio offers, so a bridge can sign calls for
// the right server and tool without parsing names.
const (
	MetaServer = "chio/server"
	MetaTool   = "chio/tool"
)

// AwaitTool is the tool chio adds to every agent's list.
const AwaitTool = "chio_await"

// ExposedName is the name an agent sees for server's tool.
func ExposedName(server, tool string) string { return server + nameSep + tool }

// agentServer is one agent's MCP server: its tools are what the agent's
// capability grants, re-derived on every tools/list and whenever an
// upstream's list changes.
type agentServer struct {
	g     *Gateway
	agent *agent
	srv   *mcpsdk.Server
	mu    sync.Mutex
	// offered: exposed name → the tool as last added (to notice changes).
	offered map[string]*mcp.Tool
}

// afterGranted runs in sync once it has read what is granted: a test's
// hook, to land a policy reload there.
var afterGranted = func() {}

func newAgentServer(g *Gateway, a *agent) *agentServer {
	as := &agentServer{g: g, agent: a, offered: map[string]*mcp.Tool{}}
	as.srv = mcpsdk.NewServer(&mcpsdk.Implementation{Name: "chio", Title: "chio gateway", Version: "1"}, &mcpsdk.ServerOptions{
		Instructions: "Tool calls go through chio, which may deny them or park them for a human's approval. " +
			"A parked call answers with an approval id: call " + AwaitTool + " with it to wait for the outcome.",
		Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{ListChanged: true}},
		Logger:       g.o.Log,
	})
	as.srv.AddTool(awaitToolDef(), as.await)
	// A policy reload can change what the capability grants: re-derive
	// the list whenever a client asks for it.
	as.srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "tools/list" {
				as.sync()
			}
			return next(ctx, method, req)
		}
	})
	return as
}

// granted is every tool the agent's capability grants now: the upstream
// MCP servers' listed tools (the Catalog) and the tools the policy knows on
// its other servers (policyTools). Each is called through the same kernel
// path (callHandler), whatever its server's transport.
//
// Exposed names can collide: server "a__b" with tool "c" and server "a"
// with tool "b__c" are both "a__b__c" (ids and tool names may contain
// "__"), whichever transports the two servers use. A call to such a name
// could reach either tool, so neither is offered (fail closed), and the
// collision is logged for the operator.
func (as *agentServer) granted() map[string]*mcp.Tool {
	p := as.g.o.Kernel.Policy()
	has := as.agent.cap.Has
	out := map[string]*mcp.Tool{}
	clash := map[string]bool{}
	offer := func(t *mcp.Tool) {
		if _, ok := p.Match(has, t.Server, t.Name, policy.DefaultOperation); !ok {
			return
		}
		name := ExposedName(t.Server, t.Name)
		switch {
		case len(name) > MaxExposedNameLen:
		case out[name] != nil || clash[name]:
			if prev := out[name]; prev != nil {
				as.g.o.Log.Error("mcp gateway: two tools have the same exposed name; offering neither",
					"name", name, "tool", prev.Server+"/"+prev.Name, "other", t.Server+"/"+t.Name)
			}
			clash[name] = true
			delete(out, name)
		default:
			out[name] = t
		}
	}
	for _, server := range as.g.o.Catalog.Servers() {
		u, _ := as.g.o.Catalog.Upstream(server)
		for _, t := range u.Tools() {
			offer(t)
		}
	}
	for _, t := range policyTools(p) {
		offer(t)
	}
	return out
}

// sync makes the server offer exactly the granted tools. The SDK tells
// connected clients (notifications/tools/list_changed).
func (as *agentServer) sync() {
	// What is granted is read under the lock: syncs run concurrently (a
	// reload's, an upstream's list change, each tools/list), and one that
	// read an older policy must not apply its list after a newer one did.
	as.mu.Lock()
	defer as.mu.Unlock()
	want := as.granted()
	afterGranted()
	var gone []string
	for name := range as.offered {
		if want[name] == nil {
			gone = append(gone, name)
			delete(as.offered, name)
		}
	}
	if len(gone) > 0 {
		as.srv.RemoveTools(gone...)
	}
	for name, t := range want {
		if old := as.offered[name]; old != nil && sameTool(old, t) {
			continue
		}
		if err := as.add(name, t); err != nil {
			// The catalogue refuses what the SDK would (mcp.addProbe);
			// should one still slip through, it is not offered — and no
			// older version of it stays offered in its place.
			as.g.o.Log.Error("mcp gateway: tool not offered", "tool", name, "err", err)
			if as.offered[name] != nil {
				delete(as.offered, name)
				as.srv.RemoveTools(name)
			}
			continue
		}
		as.offered[name] = t
	}
}

// add offers t under name (an upstream tool or a policyTools one). The
// SDK's AddTool panics on a schema it refuses; sync runs in the gateway's
// own goroutines (ToolsChanged), where a panic would end chiod, so it is
// recovered here as an error.
func (as *agentServer) add(name string, t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the MCP SDK refused it: %v", r)
		}
	}()
	as.srv.AddTool(exposedTool(name, t), as.callHandler(t.Server, t.Name))
	return nil
}

// sameTool reports whether a is offered exactly as b would be. The
// annotations count too: they are hints clients act on (one may run a
// readOnlyHint tool without asking), so a tool the upstream now calls
// destructive must not stay offered as read only.
func sameTool(a, b *mcp.Tool) bool {
	return a.Description == b.Description && a.Title == b.Title &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		reflect.DeepEqual(a.Annotations, b.Annotations)
}

// exposedTool is t as agents see it: the upstream's description and
// schemas, under its exposed name, with where it really lives in _meta.
func exposedTool(name string, t *mcp.Tool) *mcpsdk.Tool {
	out := &mcpsdk.Tool{
		Name: name, Title: t.Title, Description: t.Description, Annotations: t.Annotations,
		InputSchema: json.RawMessage(t.InputSchema),
		Meta:        mcpsdk.Meta{MetaServer: t.Server, MetaTool: t.Name},
	}
	if t.OutputSchema != nil {
		out.OutputSchema = json.RawMessage(t.OutputSchema)
	}
	return out
}

func awaitToolDef() *mcpsdk.Tool {
	return &mcpsdk.Tool{
		Name:  AwaitTool,
		Title: "Wait for a parked call",
		Description: "Waits for a tool call that chio parked for human approval and returns its outcome: " +
			"the tool's own result once a human approves and it runs, or an error result if it is denied, " +
			"cancelled or times out. Pass the approval id (ar-…) or request id from the parked call's result. " +
			"If the decision takes longer than wait_seconds, it answers that the call is still pending; call it again.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"approval id (ar-…) or request id of the parked call","minLength":1,"maxLength":128},` +
			`"wait_seconds":{"type":"integer","minimum":0,"maximum":600,"description":"how long to wait for the decision (default 20)"}},` +
			`"required":["id"],"additionalProperties":false}`),
		Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true},
	}
}
