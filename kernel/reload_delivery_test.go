package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// reloadDeliveryPolicy: grant deploys (echo, quorum 2, approvers %[1]s and
// %[2]s), and %[3]s: the wipes grant (wipesGrant) or nothing.
const reloadDeliveryPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = 2
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
%[3]s`

// wipesGrant parks every wipe for the SRE.
var wipesGrant = fmt.Sprintf(`
[[grants]]
id = "wipes"
server = "demo"
tool = "delete_file"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
[[grants.approval.approvers]]
public_key = "%s"
display_name = "SRE"
`, sre.Public())

// heldTool answers every call, but holds the first one until released
// (a slow or hanging tool server).
type heldTool struct {
	entered chan string // the held call's request id, once it reaches the tool
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	n       map[string]int
}

func newHeldTool() *heldTool {
	return &heldTool{entered: make(chan string, 1), release: make(chan struct{}), n: map[string]int{}}
}

func (h *heldTool) Dispatch(_ context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	h.mu.Lock()
	h.n[r.RequestID]++
	h.mu.Unlock()
	select {
	case h.entered <- r.RequestID:
		<-h.release
	default:
	}
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

func (h *heldTool) count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[id]
}

func (h *heldTool) letGo() { h.once.Do(func() { close(h.release) }) }

// A reload that approves a parked call (its recorded approvals meet the
// quorum in force again) must not wait for that call's tool: ApplyPolicy
// once resumed the call inside its reconcile loop, so a tool that hangs
// held the reload (chiod's SIGHUP handler) for as long as it hung, and
// every request reconciled after it waited too: here a wipe whose grant
// the same reload removed stayed pending, its agent unanswered, although
// nobody may decide it any more.
func TestReloadDoesNotWaitForTheCallsItApproves(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	tool := newHeldTool()
	parse := func(a, b keys.PrivateKey, wipes string) *policy.Policy {
		p, err := policy.Parse([]byte(fmt.Sprintf(reloadDeliveryPolicy, a.Public(), b.Public(), wipes)), "r.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w := testkit.NewWorld(t, testkit.Options{Policy: parse(financeLead, cfo, wipesGrant), Clock: clk, Dispatcher: tool,
		Agent: testkit.Key(keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))), Grants: []string{"deploys", "wipes"}})
	t.Cleanup(tool.letGo) // runs before the world's cleanup (LIFO): nothing stays held
	k, ctx := w.Kernel, context.Background()
	park := func(toolName string) *kernel.Outcome {
		out, err := k.Submit(ctx, w.Call(t, toolName, `{"target":"prod"}`, ""))
		if err != nil || out.Status != kernel.StatusPendingApproval {
			t.Fatalf("park %s: %+v %v", toolName, out, err)
		}
		return out
	}
	vote := func(out *kernel.Outcome, by keys.PrivateKey) {
		tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, by, approval.DecisionApproved, nil)
		if res, err := k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err != nil || res.Outcome != approval.StatusPending {
			t.Fatalf("vote: %+v %v", res, err)
		}
	}
	deploy := park("echo") // reconciled first (oldest)
	wipe := park("delete_file")
	// The Finance Lead approves (1 of 2), a reload drops their key, the CFO
	// approves (1 of 2 counted).
	vote(deploy, financeLead)
	if err := k.ApplyPolicy(ctx, parse(sre, cfo, wipesGrant)); err != nil {
		t.Fatal(err)
	}
	vote(deploy, cfo)
	// This reload trusts the Finance Lead again (2 of 2: it approves the
	// deploy) and removes the wipes grant (nobody may decide the wipe).
	reloaded := make(chan error, 1)
	go func() { reloaded <- k.ApplyPolicy(ctx, parse(financeLead, cfo, "")) }()
	if id := <-tool.entered; id != deploy.RequestID {
		t.Fatalf("setup: the tool holds %s, want the deploy %s", id, deploy.RequestID)
	}
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // a failure's bound, not a synchronisation
		wreq, _ := k.Approval(wipe.ApprovalRequestID)
		tool.letGo()
		<-reloaded
		t.Fatalf("the reload has not returned 10 s after the tool began the deploy it approved: it waits for the tool; "+
			"meanwhile the wipe, whose grant it removed, is still %s", wreq.Status)
	}
	// The tool still holds the deploy: the reload has reconciled the wipe.
	wreq, err := k.Approval(wipe.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if wreq.Status != approval.StatusDenied || wreq.Resolution == nil || wreq.Resolution.Guard != kernel.GuardApprovalPolicy {
		t.Fatalf("while the tool holds the deploy, the wipe is %s (%+v): want denied by %s", wreq.Status, wreq.Resolution, kernel.GuardApprovalPolicy)
	}
	// Released, the deploy is delivered once and recorded.
	tool.letGo()
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := k.Call(deploy.RequestID)
	if err != nil || rec.Status != kernel.StatusAllowed || tool.count(deploy.RequestID) != 1 {
		t.Fatalf("deploy after the release: %+v %v, sent %d time(s)", rec, err, tool.count(deploy.RequestID))
	}
	if req, _ := k.Approval(deploy.ApprovalRequestID); req.Resolution == nil || req.Resolution.ReceiptID != rec.DecisionReceiptID {
		t.Fatalf("deploy's resolution %+v: want it to name the allow receipt %s", req.Resolution, rec.DecisionReceiptID)
	}
	if st := k.Recovery(); st.Failed != 0 || st.InFlight != 0 {
		t.Fatalf("recovery %+v: the reload's resume must neither fail nor linger", st)
	}
	if tool.count(wipe.RequestID) != 0 {
		t.Fatal("the wipe reached the tool")
	}
}

// A reload that lands while chiod shuts down (Close has begun) still
// records the approval it decides, but starts no resume: the call stays
// approved and dispatching, and the next start's recovery finishes it,
// once.
func TestReloadDuringShutdownLeavesItsApprovalsToTheNextStart(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	disp := &fakeDispatcher{}
	parse := func(a, b keys.PrivateKey) *policy.Policy {
		p, err := policy.Parse([]byte(fmt.Sprintf(reloadDeliveryPolicy, a.Public(), b.Public(), "")), "r.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w := testkit.NewWorld(t, testkit.Options{Policy: parse(financeLead, cfo), Clock: clk, Dispatcher: disp, Grants: []string{"deploys"}})
	k, ctx := w.Kernel, context.Background()
	out, err := k.Submit(ctx, w.Call(t, "echo", `{"target":"prod"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	vote := func(by keys.PrivateKey) {
		tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, by, approval.DecisionApproved, nil)
		if res, err := k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err != nil || res.Outcome != approval.StatusPending {
			t.Fatalf("vote: %+v %v", res, err)
		}
	}
	vote(financeLead)
	if err := k.ApplyPolicy(ctx, parse(sre, cfo)); err != nil {
		t.Fatal(err)
	}
	vote(cfo)
	k.Close()
	restored := parse(financeLead, cfo)
	if err := k.ApplyPolicy(ctx, restored); err != nil {
		t.Fatal(err)
	}
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := k.Call(out.RequestID)
	if err != nil || rec.Status != kernel.StatusDispatching || rec.DecisionReceiptID != "" || disp.count(out.RequestID) != 0 {
		t.Fatalf("after a reload during shutdown the call is %+v (%v), sent %d time(s): want approved, undecided, unsent",
			rec, err, disp.count(out.RequestID))
	}
	next, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: restored, Store: w.Store, Dispatcher: disp, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(next.Close)
	if err := next.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if err := next.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	next.WaitSettles()
	if rec, err := next.Call(out.RequestID); err != nil || rec.Status != kernel.StatusAllowed || disp.count(out.RequestID) != 1 {
		t.Fatalf("after the next start the call is %+v (%v), sent %d time(s)", rec, err, disp.count(out.RequestID))
	}
}
