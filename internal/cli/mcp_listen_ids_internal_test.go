package cli

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

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
	mcptest.RefusesRoundedIDs(t, serveLoopbackForTest(t), "")
}

// `chio mcp serve --listen` refuses a batch that uses one id twice
// (mcptest.RefusesBatchReusingID).
func TestMCPServeListenRefusesBatchReusingID(t *testing.T) {
	mcptest.RefusesBatchReusingID(t, serveLoopbackForTest(t), "")
}

// serveLoopbackForTest runs `chio mcp serve --listen 127.0.0.1:0`'s
// server (serveLoopback) for a bridge to a chiod serving /mcp with the
// builtin demo server, and returns its URL.
func serveLoopbackForTest(t *testing.T) string {
	t.Helper()
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
	ctx, cancel := context.WithCancel(context.Background())
	b, err := mcpgw.NewBridge(ctx, mcpgw.BridgeOptions{URL: w.URL, Key: w.Agent, Capability: w.CapRaw})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	errR, errW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- serveLoopback(ctx, &Env{Stderr: errW}, "127.0.0.1:0", b) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
		b.Close()
	})
	line, err := bufio.NewReader(errR).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "chio mcp serve: MCP on ")
	if err != nil || !ok {
		t.Fatalf("serveLoopback printed %q, %v", line, err)
	}
	return url
}
