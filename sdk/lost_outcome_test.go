package chio

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// slowTool is a tool server: it records every delivery, may take a while,
// and may run a hook after it has done its work.
type slowTool struct {
	mu    sync.Mutex
	seen  map[string]int
	delay time.Duration
	after func()
}

func (d *slowTool) Dispatch(ctx context.Context, req kernel.DispatchRequest) (kernel.DispatchResult, error) {
	d.mu.Lock()
	if d.seen == nil {
		d.seen = map[string]int{}
	}
	d.seen[req.RequestID]++
	d.mu.Unlock()
	if d.delay > 0 {
		time.Sleep(d.delay) // the tool works (a deploy, a payment rail)
	}
	if d.after != nil {
		d.after()
	}
	return kernel.DispatchResult{Output: json.RawMessage(`{"paid":true}`)}, nil
}

func (d *slowTool) runs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, v := range d.seen {
		n += v
	}
	return n
}

// outageStore is the kernel's store going away (a PostgreSQL failover, a
// full disk): once down, every read and write fails.
type outageStore struct {
	kernel.Store
	down atomic.Bool
}

func (s *outageStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.down.Load() {
		return errors.New("store: connection refused")
	}
	return s.Store.Update(ctx, fn)
}

func (s *outageStore) View(fn func(kernel.ReadTx) error) error {
	if s.down.Load() {
		return errors.New("store: connection refused")
	}
	return s.Store.View(fn)
}

const lostOutcomePolicy = `
[[servers]]
id = "pay"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
delivery = "at_most_once"
[[servers.tools]]
name = "echo"

[[grants]]
id = "refunds"
server = "pay"
tool = "issue_refund"

[[grants]]
id = "deploys"
server = "pay"
tool = "echo"
`

// ErrUnavailable is documented as "chiod itself answered that it could not
// decide; nothing was allowed by that request" (errors.go; and
// docs/agent-developer.md: "unavailable (chiod's own 503, or a 429) means
// nothing was allowed"). But chiod also answers its own 503 "unavailable"
// envelope for a call it ALLOWED AND RAN whose settle commit failed
// (kernel/deliver.go commitSettled -> httpapi classify default -> 503). If
// the store stays down for the ~2 s of the SDK's retries, every attempt
// meets that 503 and CallTool returns ErrUnavailable for a refund that was
// paid: an agent trusting the documented meaning resubmits under a new id
// and pays twice.
func TestSettleFailureAfterTheToolRanIsOutcomeUnknown(t *testing.T) {
	st := &outageStore{}
	tool := &slowTool{}
	tool.after = func() { st.down.Store(true) } // the database fails just after the payment
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: lostOutcomePolicy, Dispatcher: tool, Serve: true,
		Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	c, err := NewClient(w.URL, WithKey(w.Agent), WithCapability(w.CapRaw))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", Arguments: map[string]any{"amount": 450}})
	if tool.runs() != 1 {
		t.Fatalf("the refund ran %d times, want 1 (err %v)", tool.runs(), err)
	}
	if errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("the refund was paid, yet CallTool says %v (ErrUnavailable=%v: \"nothing was allowed\"); want ErrOutcomeUnknown naming the request id",
			err, errors.Is(err, ErrUnavailable))
	}
}

// A tool legitimately running longer than the SDK's per-request timeout
// (60 s; servers may set timeout_seconds up to 3600): the first attempt is
// cut, every retry under the same id blocks on the kernel's in-flight
// duplicate wait (kernel.go Submit: inflight) until it too is cut, and
// after 4 attempts (~4 min) CallTool gives up with "outcome unknown" even
// though the call succeeds. Before 83c1a75 the Go SDK waited for it.
// requestTimeout is shortened here (its documented test hook).
func TestSlowToolOutlivingTheRequestTimeoutIsAwaitedNotUnknown(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = 200 * time.Millisecond   // stands for 60 s
	tool := &slowTool{delay: 4 * time.Second} // stands for a 5-minute deploy
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: lostOutcomePolicy, Dispatcher: tool, Serve: true,
		Server: "pay", Grants: []string{"deploys"}})
	c, err := NewClient(w.URL, WithKey(w.Agent), WithCapability(w.CapRaw), WithHTTPClient(&http.Client{}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(context.Background(), Call{Server: "pay", Tool: "echo", RequestID: "run-7:deploy"})
	time.Sleep(tool.delay) // let the deploy finish
	time.Sleep(200 * time.Millisecond)
	rec, _ := w.Kernel.Call("run-7:deploy")
	if err != nil {
		t.Fatalf("a successful deploy (ran %d time(s), recorded %s/%s) was reported to an agent using context.Background() as: %v",
			tool.runs(), rec.Status, rec.Execution, err)
	}
	if a, ok := res.(*Allowed); !ok || a.Failed() {
		t.Fatalf("result %#v", res)
	}
}
