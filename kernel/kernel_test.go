package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

const testPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
governed_intent_required = true
[grants.approval]
timeout_seconds = 600
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"

[[grants]]
id = "files"
server = "demo"
tool = "delete_file"
[grants.constraints]
forbidden_paths = ["/etc/**"]
`

// fakeDispatcher counts dispatches per request id.
type fakeDispatcher struct {
	mu    sync.Mutex
	calls map[string]int
	err   error
}

func (f *fakeDispatcher) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[r.RequestID]++
	if f.err != nil {
		return kernel.DispatchResult{}, f.err
	}
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

func (f *fakeDispatcher) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

type fixture struct {
	k      *kernel.Kernel
	store  *boltstore.Store
	clock  *clock.Fake
	disp   *fakeDispatcher
	kkey   keys.PrivateKey
	agent  keys.PrivateKey
	capRaw []byte
	cap    *kernel.Capability
	path   string
	w      *testkit.World
}

func newFixture(t testing.TB) *fixture { return newFixtureOn(t, nil) }

// newFixtureOn is newFixture whose kernel reads the fixture's fake clock
// through wrap (nil: directly) and uses its store through wrapStore, if
// given.
func newFixtureOn(t testing.TB, wrap func(*clock.Fake) clock.Clock, wrapStore ...func(kernel.Store) kernel.Store) *fixture {
	t.Helper()
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	f := &fixture{clock: clock.NewFake(time.Unix(1_800_000_000, 0)), disp: &fakeDispatcher{}}
	var kernelClock clock.Clock = f.clock
	if wrap != nil {
		kernelClock = wrap(f.clock)
	}
	var ws func(kernel.Store) kernel.Store
	if len(wrapStore) > 0 {
		ws = wrapStore[0]
	}
	f.w = testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(testPolicy, approver.Public()), Clock: kernelClock, Dispatcher: f.disp, WrapStore: ws,
		KernelKey: testkit.Key(keys.FromSeed(make([]byte, 32))), Agent: testkit.Key(keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))),
		Grants: []string{"echo", "refunds", "files"}})
	f.k, f.store, f.kkey, f.agent, f.capRaw, f.cap, f.path = f.w.Kernel, f.w.Store, f.w.KernelKey, f.w.Agent, f.w.CapRaw, f.w.Cap, f.w.StorePath
	return f
}

func (f *fixture) call(t testing.TB, tool, args, intent string) *kernel.ToolCall {
	t.Helper()
	return testkit.NewCall(t, f.agent, f.capRaw, "demo", tool, args, intent, f.clock.Now())
}

func (f *fixture) sign(t testing.TB, c *kernel.ToolCall, k keys.PrivateKey, at time.Time) {
	testkit.Sign(t, c, k, at)
}

func (f *fixture) receipt(t testing.TB, id string) *receipt.Receipt {
	t.Helper()
	return testkit.ReadReceipt(t, f.store, f.kkey.Public(), id)
}

func TestAllowDenyPendingReceipts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	cases := []struct {
		name, tool, args, intent, status, verdict, guard string
	}{
		{"allow", "echo", `{"hello":"world"}`, "", kernel.StatusAllowed, receipt.Allow, ""},
		{"deny path", "delete_file", `{"path":"/etc/passwd"}`, "", kernel.StatusDenied, receipt.Deny, kernel.GuardForbiddenPaths},
		{"deny scope", "unknown_tool", `{}`, "", kernel.StatusDenied, receipt.Deny, kernel.GuardScope},
		{"pending", "issue_refund", `{"customer_id":"c","amount":450,"currency":"USD"}`, `{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`, kernel.StatusPendingApproval, receipt.Incomplete, ""},
		{"below threshold", "issue_refund", `{"customer_id":"c","amount":50,"currency":"USD"}`, `{"purpose":"refund","max_amount":{"units":50,"currency":"USD"}}`, kernel.StatusAllowed, receipt.Allow, ""},
		{"missing intent", "issue_refund", `{"customer_id":"c","amount":450,"currency":"USD"}`, "", kernel.StatusDenied, receipt.Deny, kernel.GuardIntentRequired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			call := f.call(t, c.tool, c.args, c.intent)
			out, err := f.k.Submit(ctx, call)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != c.status {
				t.Fatalf("status %s (%s %s), want %s", out.Status, out.Guard, out.Reason, c.status)
			}
			r := f.receipt(t, out.ReceiptID)
			if r.Decision.Verdict != c.verdict || r.Decision.Guard != c.guard {
				t.Fatalf("receipt decision %+v", r.Decision)
			}
			if r.RequestID != call.RequestID || r.Subject != f.agent.Public().String() || r.PolicyHash != f.k.Policy().Hash {
				t.Fatalf("receipt binding wrong: %+v", r)
			}
			if want := map[string]int{kernel.StatusAllowed: 1}[c.status]; f.disp.count(call.RequestID) != want {
				t.Fatalf("dispatched %d times, want %d", f.disp.count(call.RequestID), want)
			}
			if c.status == kernel.StatusPendingApproval {
				if out.ApprovalRequestID == "" || out.Deadline != f.clock.Now().Unix()+600 || r.Metadata["approval_request_id"] != out.ApprovalRequestID {
					t.Fatalf("pending outcome %+v, metadata %v", out, r.Metadata)
				}
			}
		})
	}
}

func TestAuthenticationFailuresLeaveNoTrace(t *testing.T) {
	f := newFixture(t)
	other := keys.FromSeed([]byte("someone-else-someone-else-32byte"))
	otherCap, _, _ := kernel.IssueCapability(other, f.agent.Public(), []string{"echo"}, f.clock.Now(), time.Hour)
	cases := []struct {
		name   string
		mutate func(c *kernel.ToolCall)
		want   error
	}{
		{"stale proof", func(c *kernel.ToolCall) { f.sign(t, c, f.agent, f.clock.Now().Add(-61*time.Second)) }, kernel.ErrStaleProof},
		{"future proof", func(c *kernel.ToolCall) { f.sign(t, c, f.agent, f.clock.Now().Add(61*time.Second)) }, kernel.ErrStaleProof},
		{"proof by wrong key", func(c *kernel.ToolCall) { f.sign(t, c, other, f.clock.Now()) }, kernel.ErrBadProof},
		{"arguments changed after signing", func(c *kernel.ToolCall) { c.Arguments = json.RawMessage(`{"hello":"mars"}`) }, kernel.ErrBadProof},
		{"capability from untrusted issuer", func(c *kernel.ToolCall) { c.Capability = otherCap; f.sign(t, c, f.agent, f.clock.Now()) }, kernel.ErrCapabilityInvalid},
		{"tampered capability", func(c *kernel.ToolCall) {
			c.Capability = []byte(string(c.Capability[:len(c.Capability)-3]) + `0"}`)
		}, kernel.ErrCapabilityInvalid},
		{"capability with duplicate key", func(c *kernel.ToolCall) {
			c.Capability = append([]byte(`{"id":"x",`), c.Capability[1:]...)
		}, kernel.ErrCapabilityInvalid},
		{"integer above 2^53", func(c *kernel.ToolCall) { c.Arguments = json.RawMessage(`{"n":9007199254740993}`) }, kernel.ErrBadCall},
		{"duplicate argument key", func(c *kernel.ToolCall) { c.Arguments = json.RawMessage(`{"a":1,"a":2}`) }, kernel.ErrBadCall},
		{"bad request id", func(c *kernel.ToolCall) { c.RequestID = "a b" }, kernel.ErrBadCall},
		{"request id with the approval prefix", func(c *kernel.ToolCall) { c.RequestID = "ar-123"; f.sign(t, c, f.agent, f.clock.Now()) }, kernel.ErrBadCall},
		{"arguments not an object", func(c *kernel.ToolCall) { c.Arguments = json.RawMessage(`[1]`) }, kernel.ErrBadCall},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			call := f.call(t, "echo", `{"hello":"world"}`, "")
			c.mutate(call)
			_, err := f.k.Submit(context.Background(), call)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	f.store.View(func(tx kernel.ReadTx) error {
		if tx.LastSeq() != 0 {
			t.Errorf("%d receipts written for unauthenticated calls", tx.LastSeq())
		}
		return nil
	})
}

func TestExpiredAndRevokedCapabilityDeny(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.clock.Advance(time.Hour) // capability lifetime is exactly one hour
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{}`, ""))
	if err != nil || out.Status != kernel.StatusDenied || out.Guard != kernel.GuardCapability {
		t.Fatalf("expired: %+v %v", out, err)
	}
	f2 := newFixture(t)
	if err := f2.k.Revoke(ctx, f2.cap.ID); err != nil {
		t.Fatal(err)
	}
	out, err = f2.k.Submit(ctx, f2.call(t, "echo", `{}`, ""))
	if err != nil || out.Status != kernel.StatusDenied || out.Guard != kernel.GuardCapability || f2.disp.count(out.RequestID) != 0 {
		t.Fatalf("revoked: %+v %v", out, err)
	}
}

func TestRequestIDIsSingleUseAndRetriesAreIdempotent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	call := f.call(t, "echo", `{"x":1}`, "")
	// 20 concurrent retries of the same call: one dispatch, one answer.
	var wg sync.WaitGroup
	outs := make([]*kernel.Outcome, 20)
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := *call
			o, err := f.k.Submit(ctx, &c)
			if err != nil {
				t.Error(err)
			}
			outs[i] = o
		}(i)
	}
	wg.Wait()
	if n := f.disp.count(call.RequestID); n != 1 {
		t.Fatalf("dispatched %d times", n)
	}
	// Every answer names the one decision. A duplicate that arrived while
	// the first was running stops waiting once the allow decision is
	// durable, and may be answered "dispatching" (its client then awaits
	// the call); the first is answered "allowed".
	allowed := 0
	for _, o := range outs {
		if o == nil || o.ReceiptID != outs[0].ReceiptID || (o.Status != kernel.StatusAllowed && o.Status != kernel.StatusDispatching) {
			t.Fatalf("retry answered differently: %+v vs %+v", o, outs[0])
		}
		if o.Status == kernel.StatusAllowed {
			allowed++
		}
	}
	if allowed == 0 {
		t.Fatal("no answer reported the call allowed")
	}
	// The same request_id for a different call is refused.
	reused := f.call(t, "echo", `{"x":2}`, "")
	reused.RequestID = call.RequestID
	f.sign(t, reused, f.agent, f.clock.Now())
	if _, err := f.k.Submit(ctx, reused); !errors.Is(err, kernel.ErrRequestUsed) {
		t.Fatalf("reused request_id: %v", err)
	}
}

func TestDispatchFailureIsRecordedNotHidden(t *testing.T) {
	f := newFixture(t)
	f.disp.err = errors.New("connection refused")
	out, err := f.k.Submit(context.Background(), f.call(t, "echo", `{}`, ""))
	if err != nil || out.Status != kernel.StatusAllowed || out.ToolError == "" {
		t.Fatalf("%+v %v", out, err)
	}
	if r := f.receipt(t, out.ReceiptID); r.Metadata["tool_error"] == nil {
		t.Fatalf("tool error missing from receipt metadata: %v", r.Metadata)
	}
}

func TestFirstNCountsCommittedCalls(t *testing.T) {
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	p, err := policy.Parse([]byte(fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "echo"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_first_n = 1
[grants.approval]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "A"
`, approver.Public())), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.k.SetPolicy(p)
	f.capRaw, f.cap, _ = f.k.IssueCapability(f.agent.Public(), []string{"echo"}, time.Hour)
	first, _ := f.k.Submit(context.Background(), f.call(t, "echo", `{}`, ""))
	if first.Status != kernel.StatusPendingApproval {
		t.Fatalf("first call: %+v", first)
	}
	// A pending call does not count as an executed one; the approval
	// lifecycle counts it when it resolves.
	second, _ := f.k.Submit(context.Background(), f.call(t, "echo", `{}`, ""))
	if second.Status != kernel.StatusPendingApproval {
		t.Fatalf("second call: %+v", second)
	}
}

func TestClientDisconnectDoesNotCancelAnAllowedCall(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the agent hung up right after sending
	call := f.call(t, "echo", `{}`, "")
	out, err := f.k.Submit(ctx, call)
	if err != nil || out.Status != kernel.StatusAllowed || out.ToolError != "" || f.disp.count(call.RequestID) != 1 {
		t.Fatalf("%+v %v", out, err)
	}
	f.receipt(t, out.ReceiptID)
}
