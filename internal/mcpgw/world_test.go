package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// gwWorld is a kernel on bbolt serving the HTTP API and /mcp in front of
// the reference MCP server over stdio.
type gwWorld struct {
	*testkit.World
	router *dispatch.Router
	gw     atomic.Pointer[Gateway]
}

func gatewayPolicy(t testing.TB) string {
	argv, _ := json.Marshal(mcptest.EverythingStdio(t))
	return fmt.Sprintf(`
[[servers]]
id = "everything"
transport = "mcp"
command = %s

[[grants]]
id = "echo"
server = "everything"
tool = "echo"
[grants.constraints]
forbidden_paths = ["/etc/**"]
`, argv)
}

func newGatewayWorld(t testing.TB) *gwWorld {
	t.Helper()
	policyText := gatewayPolicy(t)
	w := &gwWorld{}
	p, err := policy.Parse([]byte(policyText), "gateway.toml")
	if err != nil {
		t.Fatal(err)
	}
	w.router, err = dispatch.New(p.Servers, t.TempDir(), dispatch.WithMCP(mcp.Options{
		OnToolsChanged: func(s string) {
			// The upstream may list its tools before the gateway exists.
			if g := w.gw.Load(); g != nil {
				g.ToolsChanged(s)
			}
		}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.router.Close() })
	w.World = testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: w.router, Grants: []string{"echo"}, Serve: true,
		BeforeServe: func(tw *testkit.World) {
			g, err := New(Options{Kernel: tw.Kernel, Catalog: w.router.MCP()})
			if err != nil {
				t.Fatal(err)
			}
			w.gw.Store(g)
			tw.API.Handle(Path, g)
		}})
	u, _ := w.router.MCP().Upstream("everything")
	mcptest.Eventually(t, 60*time.Second, "the reference server", u.Ready)
	return w
}

// bridge connects a go-sdk client to an in-process Bridge for w's agent.
func (w *gwWorld) bridge(t testing.TB) *mcpsdk.ClientSession {
	return bridgeTo(t, w.URL, w.Agent, w.CapRaw)
}

// bridgeTo connects a go-sdk client to an in-process Bridge that reaches
// chiod at url as the agent holding capability.
func bridgeTo(t testing.TB, url string, agent keys.PrivateKey, capability []byte) *mcpsdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := NewBridge(ctx, BridgeOptions{URL: url, Key: agent, Capability: capability})
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
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func mcpGuard(w *gwWorld) kernel.Guard { return mcp.SchemaGuard{V: w.router.MCP()} }
