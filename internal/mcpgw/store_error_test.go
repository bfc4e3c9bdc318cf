package mcpgw

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// readsDownStore fails every read once down, with the store's own error
// wrapped as pgstore wraps a failed read (readTx.wrap): pgx names the
// database's host, user and name.
type readsDownStore struct {
	kernel.Store
	down atomic.Bool
}

const storeDownDetail = "failed to connect to `host=db.internal user=chio database=chio_prod`: dial error: connection refused"

func (s *readsDownStore) View(fn func(kernel.ReadTx) error) error {
	if s.down.Load() {
		return fmt.Errorf("%w: %v", kernel.ErrUnavailable, storeDownDetail)
	}
	return s.Store.View(fn)
}

// Every /mcp request's session bearer is checked against the revocation
// list in the store. When that read failed, the SDK answered the store's
// own error (500, its text as the body): the database's host, user and
// name, to the client, as the HTTP API no longer does (it answers
// "store unavailable" and logs the cause). /mcp must do the same (its
// status stays the SDK's 500 for a check that could not be made).
func TestSessionCheckNeverServesTheStoresError(t *testing.T) {
	p, err := policy.Parse([]byte(`
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`), "store_error.toml")
	if err != nil {
		t.Fatal(err)
	}
	router, err := dispatch.New(p.Servers, t.TempDir(), dispatch.WithMCP(mcp.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	st := &readsDownStore{}
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: router, Grants: []string{"echo"}, Serve: true,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st },
		BeforeServe: func(tw *testkit.World) {
			g, err := New(Options{Kernel: tw.Kernel, Catalog: router.MCP()})
			if err != nil {
				t.Fatal(err)
			}
			tw.API.Handle(Path, g)
		}})
	bearer, err := SignSession(w.Agent, w.CapRaw, w.KernelKey.Public().String(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	req, _ := http.NewRequest("POST", w.URL+Path, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, leak := range []string{"db.internal", "user=", "chio_prod"} {
		if strings.Contains(string(body), leak) {
			t.Fatalf("/mcp tells its client %q: %d %s", leak, resp.StatusCode, body)
		}
	}
	if resp.StatusCode < 400 || !strings.Contains(string(body), "store unavailable") {
		t.Fatalf("store down: %d %s, want a refusal saying the store is unavailable", resp.StatusCode, body)
	}
}

// A tools/call whose commit failed is answered "unrecorded" with the
// kernel's error, which used to carry the store's own words: an agent (the
// party chio guards against) learnt the database's host, user and name. The
// error has the shape the kernel gives a failed allow commit.
func TestUnrecordedCallNeverServesTheStoresError(t *testing.T) {
	store := fmt.Errorf("%w: %v", kernel.ErrUnavailable, "failed to connect to `host=db.internal user=chio database=chio_prod`: dial error")
	err := fmt.Errorf("%w: the allow decision's commit failed and may be durable: %w", kernel.ErrOutcomeUnknown, store)
	res := submitError("mcp-1", err)
	text := fmt.Sprint(res.Content[0].(*mcpsdk.TextContent).Text, res.Meta)
	for _, leak := range []string{"db.internal", "user=", "chio_prod"} {
		if strings.Contains(text, leak) {
			t.Fatalf("the agent is told the store's %q: %s", leak, text)
		}
	}
	if !strings.Contains(text, "store unavailable") || !strings.Contains(text, "mcp-1") {
		t.Fatalf("the answer no longer says the store failed and which call to await: %s", text)
	}
}
