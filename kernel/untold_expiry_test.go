package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// e2e1ba2 made "a park nobody was told of" be announced at the next start
// (Notified), because with auto_approve_advisory such a call "then ran with
// no human asked". But Recover arms the deadline first and announces after,
// and nothing gives the approvers time: when the deadline passed while
// chiod was down (or passes during the restart), the untold request is
// auto-approved at once and the tool runs. No human was ever asked; the
// announcement arrives together with (or after) the execution.
func TestUntoldDueParkIsNotAutoApprovedAtStart(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	cs := &crashStore{crashAt: 2, durable: true} // update 1: standing-approval claim, 2: the park; then dead
	disp := &argsDispatcher{}
	first := &recordingNotifier{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "auto_approve_advisory"), Dispatcher: disp,
		Clock: fake, Server: "pay", Grants: []string{"refunds"}, Notifier: first,
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	ctx := context.Background()
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if _, err := w.Kernel.Submit(ctx, c); !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("park: %v", err)
	}
	w.Kernel.Close()
	// chiod is down for longer than the grant's 600 s timeout.
	fake.Advance(700 * time.Second)
	second := &recordingNotifier{}
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.Store, Dispatcher: disp, Clock: fake, Notifier: second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && len(disp.got(c.RequestID)) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(disp.got(c.RequestID)); n != 0 {
		t.Fatalf("a request no approver had been told of (told before restart: %v) was auto-approved at start and the tool ran %d time(s); "+
			"the first announcement (%v) came with the execution, giving no human a chance to refuse",
			first.events, n, second.events)
	}
}

// expiryPolicy: pay/issue_refund always needs approval (1 of 2), one hour
// to decide, arguments exposed; %[3]s = timeout_action.
const expiryPolicy = `
[[servers]]
id = "pay"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
delivery = "at_least_once"
amount = "/amount"
currency = "/currency"

[[grants]]
id = "refunds"
server = "pay"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
expose_arguments = true
timeout_seconds = 3600
timeout_action = "%[3]s"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
`

// rvHookStore runs hook(n) before the n-th Update after arm (n from 1).
type rvHookStore struct {
	kernel.Store
	armed atomic.Bool
	n     atomic.Int64
	hook  func(n int64)
}

func (s *rvHookStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.armed.Load() {
		s.hook(s.n.Add(1))
	}
	return s.Store.Update(ctx, fn)
}

// resume checks the capability's expiry against the time the vote was
// presented (Respond's now), never again: commitAllow re-checks revocation
// inside the decision commit but not expiry. A decision commit that lands
// after the capability expired (a slow or queue-full store: updateAfterVote
// retries ErrQueueFull without bound) still runs the call, and the signed
// allow receipt is timestamped after the capability's expires_at.
func TestCapabilityExpiredAtDecisionCommitIsNotRun(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	hs := &rvHookStore{}
	disp := &timedDispatcher{clock: fake}
	p, err := policy.Parse([]byte(fmt.Sprintf(expiryPolicy, financeLead.Public(), cfo.Public(), "deny")), "expiry.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: disp, Clock: fake, Server: "pay", Grants: []string{"refunds"},
		CapabilityTTL: 10 * time.Minute, WrapStore: func(s kernel.Store) kernel.Store { hs.Store = s; return hs }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	fake.Advance(9 * time.Minute) // the approver answers with a minute of capability left
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	// Update 1 is the vote, update 2 the decision commit (commitAllow):
	// it lands two minutes later (a loaded store).
	hs.hook = func(n int64) {
		if n == 2 {
			fake.Advance(2 * time.Minute)
		}
	}
	hs.armed.Store(true)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if at := disp.at.Load(); at != 0 {
		r := w.Receipt(t, res.ReceiptID)
		t.Fatalf("the tool ran at %d under a capability that expired at %d (its decision committed after expiry); "+
			"the allow receipt %s (verdict %s) claims %d",
			at, w.Cap.ExpiresAt, r.ID, r.Decision.Verdict, r.Timestamp/1000)
	}
}

// timedDispatcher records the (fake) time the tool was reached.
type timedDispatcher struct {
	clock *clock.Fake
	at    atomic.Int64
}

func (d *timedDispatcher) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	d.at.Store(d.clock.Now().Unix())
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}
