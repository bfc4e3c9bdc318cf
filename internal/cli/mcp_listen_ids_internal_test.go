package cli

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/mcpgw"
	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/policy"
)

// `chio mcp serve --listen` refuses a JSON-RPC id the SDK would read as
// another one, as its stdio transport and chiod's /mcp do
// (mcptest.RefusesRoundedIDs).
func TestMCPServeListenRefusesIntegerIDsTheSDKRounds(t *testing.T) {
	p, err := policy.Parse([]byte("[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n\n"+
		"[[grants]]\nid = \"echo\"\nserver = \"demo\"\ntool = \"echo\"\n"), "listen.toml")
	if err != nil {
		t.Fatal(err)
	}
	router, err := dispatch.New(p.Servers, t.TempDir(), dispatch.WithMCP(mcp.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: router, Grants: []string{"echo"}, Serve: true,
		BeforeServe: func(tw *testkit.World) {
			g, err := mcpgw.New(mcpgw.Options{Kernel: tw.Kernel, Catalog: router.MCP()})
			if err != nil {
				t.Fatal(err)
			}
			tw.API.Handle(mcpgw.Path, g)
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := mcpgw.NewBridge(ctx, mcpgw.BridgeOptions{URL: w.URL, Key: w.Agent, Capability: w.CapRaw})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	errR, errW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- serveLoopback(ctx, &Env{Stderr: errW}, "127.0.0.1:0", b) }()
	line, err := bufio.NewReader(errR).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "chio mcp serve: MCP on ")
	if err != nil || !ok {
		t.Fatalf("serveLoopback printed %q, %v", line, err)
	}
	mcptest.RefusesRoundedIDs(t, url, "")
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
