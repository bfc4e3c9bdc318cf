package mcpgw

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// recordReadsDownStore fails, once down, every read of a call record that
// exists and of an approval request, with the store's own words (as
// pgstore wraps a failed read): PostgreSQL failing while a parked call is
// held open, after the session bearer's revocation read succeeded.
type recordReadsDownStore struct {
	kernel.Store
	down atomic.Bool
}

func (s *recordReadsDownStore) View(fn func(kernel.ReadTx) error) error {
	return s.Store.View(func(tx kernel.ReadTx) error { return fn(recordReadsDownTx{tx, s}) })
}

type recordReadsDownTx struct {
	kernel.ReadTx
	s *recordReadsDownStore
}

func (tx recordReadsDownTx) Call(id string) (*kernel.CallRecord, error) {
	rec, err := tx.ReadTx.Call(id)
	if err == nil && tx.s.down.Load() {
		return nil, fmt.Errorf("%w: %v", kernel.ErrUnavailable, storeDownDetail)
	}
	return rec, err
}

func (tx recordReadsDownTx) Approval(id string) (*approval.Request, error) {
	if tx.s.down.Load() {
		return nil, fmt.Errorf("%w: %v", kernel.ErrUnavailable, storeDownDetail)
	}
	return tx.ReadTx.Approval(id)
}

// waitStoreWorld is chiod with the builtin demo server, whose refunds
// always park for approver, over st.
func waitStoreWorld(t *testing.T, st *recordReadsDownStore) (*testkit.World, keys.PrivateKey) {
	t.Helper()
	approver, _ := keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(alwaysApprovedRefunds, approver.Public())), "wait_store_error.toml")
	if err != nil {
		t.Fatal(err)
	}
	router, err := dispatch.New(p.Servers, t.TempDir(), dispatch.WithMCP(mcp.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: router, Grants: []string{"refunds"}, Serve: true,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st },
		BeforeServe: func(tw *testkit.World) {
			g, err := New(Options{Kernel: tw.Kernel, Catalog: router.MCP()})
			if err != nil {
				t.Fatal(err)
			}
			tw.API.Handle(Path, g)
		}})
	return w, approver
}

// waitStoreBridge is an MCP client on a Bridge for w's agent asking chiod
// to hold parked calls open for pendingWait.
func waitStoreBridge(t *testing.T, w *testkit.World, pendingWait time.Duration) *mcpsdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := NewBridge(ctx, BridgeOptions{URL: w.URL, Key: w.Agent, Capability: w.CapRaw, PendingWait: pendingWait})
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
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "wait-store-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// checkUnreadableAnswer fails unless the agent got an isError result that
// names the id to await (awaitID, as the request or approval id, when it
// is set; a request id otherwise) and says the store failed, not the
// store's own words and not a JSON-RPC error (which a client reports as a
// failed call, inviting a retry under a new request id).
func checkUnreadableAnswer(t *testing.T, what string, r *mcpsdk.CallToolResult, err error, awaitID string) {
	t.Helper()
	text := fmt.Sprint(err)
	if r != nil {
		text += " " + resultText(r) + fmt.Sprint(r.Meta)
	}
	for _, leak := range []string{"db.internal", "user=", "chio_prod"} {
		if strings.Contains(text, leak) {
			t.Fatalf("%s: the agent is told the store's %q: %s", what, leak, text)
		}
	}
	if err != nil {
		t.Fatalf("%s: a JSON-RPC error, not a result naming the call to await: %v", what, err)
	}
	id, _ := r.Meta[MetaRequestID].(string)
	named := id != ""
	if awaitID != "" {
		named = id == awaitID || r.Meta[MetaApprovalID] == awaitID
	}
	if !r.IsError || r.Meta[MetaStatus] != StatusUnrecorded || !named ||
		!strings.Contains(resultText(r), AwaitTool) || !strings.Contains(resultText(r), "store unavailable") {
		t.Fatalf("%s: want an isError %q result naming %q to await: %s", what, StatusUnrecorded, awaitID, text)
	}
}

// A parked call is held open (the pending wait) by reading its record
// until it leaves pending. When that read failed — the store going down
// while a human decides, minutes long — the gateway answered the read's
// error as a JSON-RPC error: the store's own words (the database's host,
// user and name) to the agent, the party chio guards against, and no
// request id to await, for a call that stays parked and may yet run.
func TestParkedCallWaitNeverServesTheStoresError(t *testing.T) {
	st := &recordReadsDownStore{}
	w, _ := waitStoreWorld(t, st)
	cs := waitStoreBridge(t, w, 10*time.Minute)
	st.down.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "demo__issue_refund",
		Arguments: map[string]any{"customer_id": "cust-1", "amount": 5, "currency": "USD"}})
	st.down.Store(false)
	checkUnreadableAnswer(t, "parked refund", r, err, "")
	rec, rerr := w.Kernel.Call(r.Meta[MetaRequestID].(string))
	if rerr != nil || rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("the call named is not the parked refund: %+v %v", rec, rerr)
	}
}

// chio_await reads the approval and the call; a failed read was answered
// as a JSON-RPC error carrying the store's own words.
func TestAwaitNeverServesTheStoresError(t *testing.T) {
	st := &recordReadsDownStore{}
	w, _ := waitStoreWorld(t, st)
	cs := waitStoreBridge(t, w, time.Millisecond)
	r := callTool(t, cs, "demo__issue_refund", map[string]any{"customer_id": "cust-1", "amount": 5, "currency": "USD"})
	approvalID, _ := r.Meta[MetaApprovalID].(string)
	requestID, _ := r.Meta[MetaRequestID].(string)
	if r.Meta[MetaStatus] != kernel.StatusPendingApproval || approvalID == "" || requestID == "" {
		t.Fatalf("refund: %v %q", r.Meta, resultText(r))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st.down.Store(true)
	defer st.down.Store(false)
	for _, id := range []string{approvalID, requestID} {
		r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: AwaitTool, Arguments: map[string]any{"id": id, "wait_seconds": 0}})
		checkUnreadableAnswer(t, "chio_await "+id, r, err, id)
	}
}
