package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/policy"
)

// Server "a__b" with tool "c" and server "a" with tool "b__c" both expose
// "a__b__c" (the policy allows "__" in server ids, MCP in tool names). A
// call to that name could reach either tool, so neither is offered; the
// other tools are.
func TestCollidingExposedNamesAreNotOffered(t *testing.T) {
	noCall := func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		t.Error("no tool should be called")
	}
	upAB := &rawUp{tools: `[{"name":"c","inputSchema":{"type":"object"}}]`, onCall: noCall}
	upA := &rawUp{tools: `[{"name":"b__c","inputSchema":{"type":"object"}},{"name":"d","inputSchema":{"type":"object"}}]`, onCall: noCall}
	srvAB, srvA := httptest.NewServer(upAB), httptest.NewServer(upA)
	t.Cleanup(srvAB.Close)
	t.Cleanup(srvA.Close)
	text := fmt.Sprintf(`
[[servers]]
id = "a__b"
transport = "mcp"
url = %q

[[servers]]
id = "a"
transport = "mcp"
url = %q

[[grants]]
id = "ab"
server = "a__b"
tool = "*"

[[grants]]
id = "a"
server = "a"
tool = "*"
`, srvAB.URL+"/mcp", srvA.URL+"/mcp")
	p, err := policy.Parse([]byte(text), "names.toml")
	if err != nil {
		t.Fatal(err)
	}
	router, err := dispatch.New(p.Servers, t.TempDir(), dispatch.WithMCP(mcp.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	w := &rawWorld{router: router}
	w.World = testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: router, Grants: []string{"ab", "a"}, Serve: true,
		BeforeServe: func(tw *testkit.World) {
			g, err := New(Options{Kernel: tw.Kernel, Catalog: router.MCP()})
			if err != nil {
				t.Fatal(err)
			}
			w.gw.Store(g)
			tw.API.Handle(Path, g)
		}})
	for _, id := range []string{"a__b", "a"} {
		u, _ := router.MCP().Upstream(id)
		mcptest.Eventually(t, 20*time.Second, "upstream "+id, u.Ready)
	}
	cs, err := w.bridge(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if slices.Contains(names, "a__b__c") || !slices.Contains(names, "a__d") {
		t.Fatalf("offered %v: want a__d and no a__b__c", names)
	}
	r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "a__b__c", Arguments: map[string]any{}})
	if err == nil && !r.IsError {
		t.Fatalf("a call to the colliding name was answered: %v", r.Content)
	}
}
