package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// faultStore fails Update on demand: every update while failAll is set,
// or the updates for which failNth returns true (counted from 1). An
// update for which holdNth returns true waits until release is closed.
type faultStore struct {
	kernel.Store
	failAll atomic.Bool
	n       atomic.Int64
	failNth func(n int64) bool
	holdNth func(n int64) bool
	release chan struct{}
	// afterView, if set, runs after each View has read, before it returns.
	afterView atomic.Pointer[func()]
}

func (s *faultStore) View(fn func(kernel.ReadTx) error) error {
	err := s.Store.View(fn)
	if f := s.afterView.Load(); f != nil {
		(*f)()
	}
	return err
}

func (s *faultStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	n := s.n.Add(1)
	if s.failAll.Load() || (s.failNth != nil && s.failNth(n)) {
		return fmt.Errorf("%w: injected commit failure (update %d)", kernel.ErrUnavailable, n)
	}
	if s.holdNth != nil && s.holdNth(n) {
		<-s.release
	}
	return s.Store.Update(ctx, fn)
}

// holdUpdate makes the store's nth update (counted from 1) wait until
// w.store.release is closed.
func (w *waWorld) holdUpdate(nth int64) {
	w.store.release = make(chan struct{})
	w.store.holdNth = func(n int64) bool { return n == nth }
}

// recoverNow runs recovery (as a store heal does) and waits for it.
func recoverNow(t *testing.T, k *kernel.Kernel) {
	t.Helper()
	if err := k.RecoverInFlight(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
}

// scriptedTool answers each delivery from a script (then succeeds) and
// records what it saw; check, if set, runs at each delivery.
type scriptedTool struct {
	mu     sync.Mutex
	script []error
	seen   map[string][]kernel.DispatchRequest
	check  func(kernel.DispatchRequest)
	block  chan struct{}
}

func (d *scriptedTool) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	if d.check != nil {
		d.check(r)
	}
	if d.block != nil {
		<-d.block
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string][]kernel.DispatchRequest{}
	}
	d.seen[r.RequestID] = append(d.seen[r.RequestID], r)
	if len(d.script) > 0 {
		err := d.script[0]
		d.script = d.script[1:]
		if err != nil {
			return kernel.DispatchResult{}, err
		}
	}
	return kernel.DispatchResult{Output: json.RawMessage(`{"done":true}`)}, nil
}

func (d *scriptedTool) deliveries(id string) []kernel.DispatchRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[id]
}

const writeAheadPolicy = `
[[servers]]
id = "pay"
transport = "builtin"
retry_deadline_seconds = 2
[[servers.tools]]
name = "echo"
[[servers.tools]]
name = "issue_refund"
delivery = "at_most_once"

[[grants]]
id = "echo"
server = "pay"
tool = "echo"

[[grants]]
id = "refunds"
server = "pay"
tool = "issue_refund"

[[grants]]
id = "asked"
server = "pay"
tool = "delete_file"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`

type waWorld struct {
	*testkit.World
	tool  *scriptedTool
	store *faultStore
}

func newWAWorld(t *testing.T, tool *scriptedTool) *waWorld {
	return newWAWorldClock(t, tool, nil)
}

// newWAWorldClock is newWAWorld on the given clock (nil: the real one).
func newWAWorldClock(t *testing.T, tool *scriptedTool, c clock.Clock) *waWorld {
	t.Helper()
	fs := &faultStore{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeAheadPolicy, financeLead.Public()), Dispatcher: tool, Clock: c,
		Server: "pay", Grants: []string{"echo", "refunds", "asked"},
		WrapStore: func(s kernel.Store) kernel.Store { fs.Store = s; return fs }})
	return &waWorld{World: w, tool: tool, store: fs}
}

// Issue 11 (1): the tool sees a call only once its allow decision — the
// signed allow receipt and the call record — is durable.
func TestDecisionIsDurableBeforeTheToolSeesTheCall(t *testing.T) {
	var w *waWorld
	var checked atomic.Int64
	tool := &scriptedTool{}
	tool.check = func(r kernel.DispatchRequest) {
		rec, err := w.Kernel.Call(r.RequestID)
		if err != nil || rec.Status != kernel.StatusDispatching || rec.DecisionReceiptID == "" {
			t.Errorf("%s reached the tool with no durable decision: %+v %v", r.RequestID, rec, err)
			return
		}
		if got := testkit.ReadReceipt(t, w.Store, w.KernelKey.Public(), rec.DecisionReceiptID); got.Decision.Verdict != receipt.Allow {
			t.Errorf("decision receipt is %v", got.Decision)
		}
		checked.Add(1)
	}
	w = newWAWorld(t, tool)
	ctx := context.Background()
	// Allowed directly.
	if out := w.Submit(t, "echo", `{"a":1}`, ""); out.Status != kernel.StatusAllowed || out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("direct: %+v", out)
	}
	// Approved by a human.
	out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", "")
	if err != nil || res.Call == nil || res.Call.Status != kernel.StatusAllowed {
		t.Fatalf("approved: %+v %v", res, err)
	}
	if checked.Load() != 2 {
		t.Fatalf("checked %d deliveries", checked.Load())
	}
}

// Issue 11 (1): a store that cannot commit never dispatches; the SDK's
// retries with the same request id do not either; once it can, one retry
// runs the call once.
func TestStoreThatCannotCommitNeverDispatches(t *testing.T) {
	w := newWAWorld(t, &scriptedTool{})
	w.store.failAll.Store(true)
	c := w.Call(t, "echo", `{"a":1}`, "")
	for i := 0; i < 4; i++ { // the SDK retries a 503 with the same id
		if _, err := w.Kernel.Submit(context.Background(), c); !errors.Is(err, kernel.ErrUnavailable) {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	if n := len(w.tool.deliveries(c.RequestID)); n != 0 {
		t.Fatalf("the tool saw the call %d times with no durable decision", n)
	}
	w.store.failAll.Store(false)
	out, err := w.Kernel.Submit(context.Background(), c)
	if err != nil || out.Status != kernel.StatusAllowed || len(w.tool.deliveries(c.RequestID)) != 1 {
		t.Fatalf("after the store recovered: %+v %v (%d deliveries)", out, err, len(w.tool.deliveries(c.RequestID)))
	}
}

// restart builds a second kernel on the same store, as chiod does after a
// crash (the first kernel's memory is gone), and runs recovery.
func restart(t *testing.T, w *waWorld, tool kernel.Dispatcher) *kernel.Kernel {
	t.Helper()
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.Store, Dispatcher: tool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	return k
}

// Issue 11 (2, 3): a crash between dispatch and the final commit. An
// at_least_once call is re-sent once with the same idempotency key; an
// at_most_once call is never re-sent and ends as unknown, with a receipt.
func TestCrashAfterDecisionFollowsDeliverySemantics(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	// Every settle commit fails: the tool has run, the store says
	// "dispatching" — what a kill -9 at that line leaves.
	w.store.failNth = func(n int64) bool { return n%2 == 0 }
	echo := w.Call(t, "echo", `{"a":1}`, "")
	refund := w.Call(t, "issue_refund", `{"customer_id":"c","amount":5,"currency":"USD"}`, "")
	// at_most_once waits for its settle commit: the agent learns it failed.
	if _, err := w.Kernel.Submit(context.Background(), refund); !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("at_most_once: %v", err)
	}
	// A successful at_least_once call is answered before its settle commit
	// (settling.go): the agent has the output; the record is recovery's.
	if out, err := w.Kernel.Submit(context.Background(), echo); err != nil || out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("at_least_once: %+v %v", out, err)
	}
	w.Kernel.WaitSettles()
	w.store.failNth = nil
	w.Kernel.Close()
	k := restart(t, w, tool)

	if d := tool.deliveries(echo.RequestID); len(d) != 2 || d[1].RequestID != d[0].RequestID {
		t.Fatalf("at_least_once: %d deliveries", len(d))
	}
	rec, _ := k.Call(echo.RequestID)
	if rec.Status != kernel.StatusAllowed || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("at_least_once after recovery: %+v", rec)
	}
	if d := tool.deliveries(refund.RequestID); len(d) != 1 {
		t.Fatalf("at_most_once was re-sent: %d deliveries", len(d))
	}
	rec, _ = k.Call(refund.RequestID)
	if rec.Status != kernel.StatusAllowed || rec.Execution != kernel.ExecutionUnknown || rec.ToolError == "" {
		t.Fatalf("at_most_once after recovery: %+v", rec)
	}
	r := testkit.ReadReceipt(t, w.Store, w.KernelKey.Public(), rec.ReceiptID)
	if r.Decision.Verdict != receipt.Incomplete || r.Metadata["execution"] != kernel.ExecutionUnknown || r.Metadata["previous_receipt_id"] != rec.DecisionReceiptID {
		t.Fatalf("unknown outcome receipt: %+v", r)
	}
	// A retry of the same request id is answered from the record: no new delivery.
	out, err := k.Submit(context.Background(), refund)
	if err != nil || out.Execution != kernel.ExecutionUnknown || len(tool.deliveries(refund.RequestID)) != 1 {
		t.Fatalf("retry after recovery: %+v %v", out, err)
	}
}

// A store that failed only the settle commit and then healed: the kernel
// still holds the tool's answer and records it — no second delivery, for
// a call answered after its settle commit (at_most_once: the agent got
// 503) and for one answered before it (at_least_once success).
func TestHealRecordsTheKnownAnswerWithoutResending(t *testing.T) {
	for _, tc := range []struct{ tool, args, output string }{
		{"issue_refund", `{"customer_id":"c","amount":5,"currency":"USD"}`, `{"done":true}`},
		{"echo", `{"a":1}`, `{"done":true}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tool := &scriptedTool{}
			w := newWAWorld(t, tool)
			w.store.failNth = func(n int64) bool { return n == 2 }
			c := w.Call(t, tc.tool, tc.args, "")
			out, err := w.Kernel.Submit(context.Background(), c)
			if tc.tool == "echo" {
				if err != nil || string(out.Output) != tc.output {
					t.Fatalf("answered before the settle commit: %+v %v", out, err)
				}
				// Until the heal, reads see what the agent was told.
				if rec, _ := w.Kernel.Call(c.RequestID); rec.Status != kernel.StatusAllowed {
					t.Fatalf("read after the answer: %+v", rec)
				}
			} else if !errors.Is(err, kernel.ErrUnavailable) {
				t.Fatal(err)
			}
			w.Kernel.WaitSettles()
			recoverNow(t, w.Kernel)
			var rec *kernel.CallRecord
			_ = w.Store.View(func(tx kernel.ReadTx) error { rec, err = tx.Call(c.RequestID); return err })
			if rec.Status != kernel.StatusAllowed || string(rec.Output) != tc.output || len(tool.deliveries(c.RequestID)) != 1 {
				t.Fatalf("after heal: %+v (%d deliveries)", rec, len(tool.deliveries(c.RequestID)))
			}
		})
	}
}

// Issue 11 (4): recovery runs in the background: a hanging tool does not
// hold start-up, and new calls are decided meanwhile.
func TestRecoveryDoesNotBlockStartUp(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	w.store.failNth = func(n int64) bool { return n%2 == 0 }
	var ids []string
	for i := 0; i < 6; i++ {
		c := w.Call(t, "echo", fmt.Sprintf(`{"i":%d}`, i), "")
		_, _ = w.Kernel.Submit(context.Background(), c)
		w.Kernel.WaitSettles() // its settle commit is update 2i+2: it fails
		ids = append(ids, c.RequestID)
	}
	w.store.failNth = nil
	w.Kernel.Close()
	hanging := &scriptedTool{block: make(chan struct{})}
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.Store, Dispatcher: hanging})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	start := time.Now()
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("Recover returned after %s with 6 calls to a hanging tool", time.Since(start))
	deadline := time.Now().Add(5 * time.Second)
	for k.Recovery().InFlight != 6 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := k.Recovery().InFlight; got != 6 {
		t.Fatalf("recovery in flight = %d, want 6", got)
	}
	// A new decision is taken while recovery waits on the tool.
	c := testkit.NewCall(t, w.Agent, w.CapRaw, "pay", "delete_file", `{"path":"/tmp/y"}`, "", time.Now())
	if out, err := k.Submit(context.Background(), c); err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("submit during recovery: %+v %v", out, err)
	}
	close(hanging.block)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if rec, _ := k.Call(id); rec.Status != kernel.StatusAllowed {
			t.Fatalf("%s: %s", id, rec.Status)
		}
	}
}

// Issue 11 (5): transient failures are retried within the tool's retry
// deadline; what stays broken ends with a receipt that says so.
func TestTransientFailuresAreRetried(t *testing.T) {
	refused := &kernel.DeliveryError{Err: errors.New("connection refused"), NotDelivered: true, Retryable: true}
	maybe := &kernel.DeliveryError{Err: errors.New("502 bad gateway"), Retryable: true}
	t.Run("refused twice, then delivered", func(t *testing.T) {
		w := newWAWorld(t, &scriptedTool{script: []error{refused, refused}})
		out := w.Submit(t, "echo", `{"a":1}`, "")
		rec, _ := w.Kernel.Call(out.RequestID)
		if out.Status != kernel.StatusAllowed || out.Execution != kernel.ExecutionSucceeded || rec.Attempts != 3 {
			t.Fatalf("%+v (attempts %d)", out, rec.Attempts)
		}
	})
	t.Run("at_most_once is not retried once it may have arrived", func(t *testing.T) {
		tool := &scriptedTool{script: []error{maybe}}
		w := newWAWorld(t, tool)
		out := w.Submit(t, "issue_refund", `{"customer_id":"c","amount":5,"currency":"USD"}`, "")
		if out.Execution != kernel.ExecutionUnknown || len(tool.deliveries(out.RequestID)) != 1 {
			t.Fatalf("%+v (%d deliveries)", out, len(tool.deliveries(out.RequestID)))
		}
	})
	t.Run("at_most_once is retried when it certainly did not arrive", func(t *testing.T) {
		tool := &scriptedTool{script: []error{refused}}
		w := newWAWorld(t, tool)
		out := w.Submit(t, "issue_refund", `{"customer_id":"c","amount":5,"currency":"USD"}`, "")
		if out.Execution != kernel.ExecutionSucceeded || len(tool.deliveries(out.RequestID)) != 2 {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("down past the retry deadline", func(t *testing.T) {
		script := make([]error, 1000)
		for i := range script {
			script[i] = refused
		}
		w := newWAWorld(t, &scriptedTool{script: script})
		start := time.Now()
		out := w.Submit(t, "echo", `{"a":1}`, "")
		if out.Status != kernel.StatusAllowed || out.Execution != kernel.ExecutionNotDelivered || out.ToolError == "" {
			t.Fatalf("%+v", out)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Fatalf("gave up after %s with a 2 s retry deadline", took)
		}
		r := w.Receipt(t, out.ReceiptID)
		if r.Decision.Verdict != receipt.Incomplete || r.Metadata["execution"] != kernel.ExecutionNotDelivered {
			t.Fatalf("failure receipt: %+v", r)
		}
	})
	t.Run("permanent failure is not retried", func(t *testing.T) {
		tool := &scriptedTool{script: []error{errors.New("tls: bad certificate")}}
		w := newWAWorld(t, tool)
		out := w.Submit(t, "echo", `{"a":1}`, "")
		if out.Execution != kernel.ExecutionUnknown || len(tool.deliveries(out.RequestID)) != 1 {
			t.Fatalf("%+v", out)
		}
	})
}

// Issue 10 (4): the tool receives exactly the canonical bytes that
// parameter_hash covers, and numbers that are not exactly what they spell
// are refused before anything is decided.
func TestToolReceivesTheCanonicalBytes(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	out := w.Submit(t, "echo", `{ "b" : 1.50, "a":"<&>", "c":1e2 }`, "")
	d := tool.deliveries(out.RequestID)
	if len(d) != 1 || string(d[0].Arguments) != `{"a":"<&>","b":1.5,"c":100}` {
		t.Fatalf("tool received %s", d[0].Arguments)
	}
	want, _ := kernel.ParameterHash("pay", "echo", d[0].Arguments, nil)
	if r := w.Receipt(t, out.ReceiptID); r.ParameterHash != want {
		t.Fatalf("hash %s does not cover the delivered bytes (%s)", r.ParameterHash, want)
	}
	for _, args := range []string{`{"n":9007199254740993.0}`, `{"n":9.007199254740993e15}`, `{"n":1e16}`} {
		// Unsigned: the arguments are refused before the proof is looked at.
		c := &kernel.ToolCall{RequestID: w.NextRequestID(), Capability: w.CapRaw, Server: "pay", Tool: "echo", Arguments: json.RawMessage(args)}
		if _, err := w.Kernel.Submit(context.Background(), c); !errors.Is(err, kernel.ErrBadCall) {
			t.Errorf("%s: %v", args, err)
		}
		if len(tool.deliveries(c.RequestID)) != 0 {
			t.Errorf("%s reached the tool", args)
		}
	}
}
