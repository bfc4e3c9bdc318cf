package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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

const authorityPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`

// An operator who stops trusting an authority key (it leaked) removes
// authority_key and restarts chiod. A call parked under a capability that
// key signed must not run when a human approves it afterwards: the resume
// re-validates the capability (SPEC §4), and a capability whose issuer the
// kernel no longer trusts is as invalid as a revoked one. Before the fix
// the approval dispatched it while the same capability's new calls were
// refused.
func TestParkedCallOfUntrustedAuthorityDoesNotRun(t *testing.T) {
	ctx := context.Background()
	kkey := keys.FromSeed([]byte("kernel-kernel-kernel-kernel-32by"))
	authority := keys.FromSeed([]byte("authority-authority-authority-32"))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	fake := clock.NewFake(time.Unix(1_800_000_000, 0))
	p, err := policy.Parse([]byte(fmt.Sprintf(authorityPolicy, approver.Public())), "authority.toml")
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "chio.db")
	disp := &fakeDispatcher{}
	start := func(authorities ...keys.PublicKey) (*kernel.Kernel, *boltstore.Store) {
		st, err := boltstore.Open(dbPath, kkey, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := kernel.New(kernel.Config{Key: kkey, Policy: p, Store: st, Dispatcher: disp, Clock: fake, Authorities: authorities})
		if err != nil {
			t.Fatal(err)
		}
		return k, st
	}

	// Started trusting the authority: its capability's call parks.
	k1, st1 := start(authority.Public())
	capRaw, _, err := kernel.IssueCapability(authority, agent.Public(), []string{"refunds"}, fake.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	args := `{"customer_id":"c","amount":450,"currency":"USD"}`
	out, err := k1.Submit(ctx, testkit.NewCall(t, agent, capRaw, "demo", "issue_refund", args, "", fake.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	k1.Close()
	st1.Close()

	// Restarted without it: the capability is refused for new calls...
	k2, st2 := start()
	defer st2.Close()
	defer k2.Close()
	if _, err := k2.Submit(ctx, testkit.NewCall(t, agent, capRaw, "demo", "issue_refund", args, "", fake.Now())); !errors.Is(err, kernel.ErrCapabilityInvalid) {
		t.Fatalf("a new call under the untrusted authority's capability: %v, want ErrCapabilityInvalid", err)
	}
	// ...and the parked one does not run when approved.
	tok := testkit.SignToken(t, k2, fake.Now(), out.ApprovalRequestID, approver, "approved", nil)
	res, err := k2.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if n := disp.count(out.RequestID); n != 0 {
		t.Fatalf("the tool received the call %d time(s) under a capability whose issuer is no longer trusted", n)
	}
	if res.Call == nil || res.Call.Status != kernel.StatusDenied || res.Call.Guard != kernel.GuardCapability {
		t.Fatalf("call after approval: %+v, want denied by %s", res.Call, kernel.GuardCapability)
	}
	r := testkit.ReadReceipt(t, st2, kkey.Public(), res.Call.ReceiptID)
	if r.Decision.Verdict != receipt.Deny || r.Decision.Guard != kernel.GuardCapability {
		t.Fatalf("final receipt %+v", r.Decision)
	}
}

// The same for an allowed call that recovery re-sends after a restart (its
// settle was lost): without the authority key, it is not sent again, as it
// would not be after a revocation (TestRevocationStopsResends).
func TestUntrustedAuthorityStopsResendsAfterRestart(t *testing.T) {
	authority := keys.FromSeed([]byte("authority-authority-authority-32"))
	maybe := &kernel.DeliveryError{Err: errors.New("read tcp: connection reset after the request was written")}
	w := newWAWorld(t, &scriptedTool{script: []error{maybe}})
	// The kernel as it ran before the restart: trusting the authority.
	before, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.store, Dispatcher: w.tool,
		Authorities: []keys.PublicKey{authority.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	capRaw, _, err := kernel.IssueCapability(authority, w.Agent.Public(), []string{"echo"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := w.CallAs(t, w.Agent, capRaw, "pay", "echo", `{"a":1}`, "")
	w.store.failNth = func(n int64) bool { return n == 2 } // the settle commit: lost in the crash
	if _, err := before.Submit(context.Background(), c); !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("first run: %v", err)
	}
	if n := len(w.tool.deliveries(c.RequestID)); n != 1 {
		t.Fatalf("first run: %d deliveries", n)
	}
	w.store.failNth = nil
	before.Close()

	tool2 := &scriptedTool{}
	k := restart(t, w, tool2) // without the authority key
	if n := len(tool2.deliveries(c.RequestID)); n != 0 {
		t.Fatalf("recovery re-sent the call %d time(s) under a capability whose issuer is no longer trusted", n)
	}
	rec, err := k.Call(c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Execution != kernel.ExecutionUnknown {
		t.Fatalf("execution %q (%s); the first attempt may have run, want %q", rec.Execution, rec.ToolError, kernel.ExecutionUnknown)
	}
}
