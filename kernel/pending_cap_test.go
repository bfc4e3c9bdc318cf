package kernel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// pendingCapPolicy: every echo asks a human; one agent may have 2 waiting.
const pendingCapPolicy = `
[kernel]
max_pending_approvals_per_agent = 2

[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "ask"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
timeout_action = "deny"
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Lead"
`

// One agent cannot park more approval requests than
// max_pending_approvals_per_agent: the call over the cap is denied with a
// receipt naming the cap, nothing is parked and no approver is asked.
// Another agent is not affected, and each way a request stops waiting
// (approved, denied, cancelled, timed out) makes room again.
func TestPendingApprovalsPerAgentAreCapped(t *testing.T) {
	lead := keys.FromSeed([]byte("lead-lead-lead-lead-lead-lead-32"))
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(pendingCapPolicy, lead.Public()),
		Server: "demo", Grants: []string{"ask"}, Clock: clk})
	ctx := context.Background()
	park := func(agent keys.PrivateKey, capRaw []byte) *kernel.Outcome {
		t.Helper()
		return w.SubmitCall(t, w.CallAs(t, agent, capRaw, "demo", "echo", `{"n":1}`, ""))
	}
	mustPark := func(agent keys.PrivateKey, capRaw []byte) string {
		t.Helper()
		out := park(agent, capRaw)
		if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("want a parked call, got %s (%s: %s)", out.Status, out.Guard, out.Reason)
		}
		return out.ApprovalRequestID
	}
	mustBeCapped := func(what string) {
		t.Helper()
		out := park(w.Agent, w.CapRaw)
		if out.Status != kernel.StatusDenied || out.Guard != kernel.GuardPendingCap || out.ApprovalRequestID != "" {
			t.Fatalf("%s: want a deny by %s, got %s by %q (approval %q)", what, kernel.GuardPendingCap, out.Status, out.Guard, out.ApprovalRequestID)
		}
		if !strings.Contains(out.Reason, "2 approval requests waiting") {
			t.Fatalf("%s: reason %q", what, out.Reason)
		}
		r := w.Receipt(t, out.ReceiptID)
		if r.Decision.Verdict != receipt.Deny || r.Decision.Guard != kernel.GuardPendingCap {
			t.Fatalf("%s: receipt %+v", what, r.Decision)
		}
	}
	pending := func() int {
		t.Helper()
		reqs, err := w.Kernel.ListPending(kernel.PendingFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(reqs)
	}

	a1, a2 := mustPark(w.Agent, w.CapRaw), mustPark(w.Agent, w.CapRaw)
	mustBeCapped("third call")
	mustBeCapped("fourth call") // a deny does not count as waiting either way
	if n := pending(); n != 2 {
		t.Fatalf("%d requests waiting, want 2: the capped calls parked nothing", n)
	}

	// Another agent has its own count.
	other := keys.FromSeed([]byte("other-agent-other-agent-other-32"))
	otherCap, _, err := w.Kernel.IssueCapability(other.Public(), []string{"ask"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	o1, o2 := mustPark(other, otherCap), mustPark(other, otherCap)

	// Approved: room for one more.
	if _, err := w.Kernel.Respond(ctx, a1, w.Token(t, a1, lead, "approved", nil), "approved", "api"); err != nil {
		t.Fatal(err)
	}
	a3 := mustPark(w.Agent, w.CapRaw)
	mustBeCapped("after an approval made room for one")

	// Denied by the approver.
	if _, err := w.Kernel.Respond(ctx, a2, w.Token(t, a2, lead, "denied", nil), "denied", "api"); err != nil {
		t.Fatal(err)
	}
	a4 := mustPark(w.Agent, w.CapRaw)
	mustBeCapped("after a denial made room for one")

	// Cancelled.
	if _, err := w.Kernel.Cancel(ctx, a3, "no longer needed", kernel.CancelledByAgent); err != nil {
		t.Fatal(err)
	}
	a5 := mustPark(w.Agent, w.CapRaw)
	mustBeCapped("after a cancellation made room for one")

	// Timed out: both of this agent's, and the other agent's, at once.
	clk.Advance(601 * time.Second)
	for _, id := range []string{a4, a5, o1, o2} {
		if err := w.Kernel.Expire(ctx, id); err != nil && !strings.Contains(err.Error(), "not pending") {
			t.Fatalf("expire %s: %v", id, err)
		}
	}
	// The kernel's own timers fire on the advance too, and may be the ones
	// resolving them: wait for every deadline's outcome to be durable.
	for start := time.Now(); pending() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d requests still waiting 10 s after every deadline passed", pending())
		}
	}
	mustPark(w.Agent, w.CapRaw)
	mustPark(w.Agent, w.CapRaw)
	mustBeCapped("after timeouts made room for two")
	mustPark(other, otherCap)
}

// Every write the kernel makes goes through k.update, so that no approval
// request changes state without the per-agent count seeing it.
func TestKernelWritesOnlyThroughUpdate(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	direct := regexp.MustCompile(`\.store\.Update\b`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "pending_cap.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if direct.Match(src) {
			t.Errorf("%s calls k.store.Update directly: use k.update (pending_cap.go)", f)
		}
	}
}

// Each start recounts every agent's waiting requests: counts that writes
// of an older build (still serving during a rolling upgrade) left wrong
// are healed, too low (requests it parked uncounted) and too high
// (requests it ended without taking them off, which would lock the agent
// out for good).
func TestPendingCountIsRecountedAtEachStart(t *testing.T) {
	lead := keys.FromSeed([]byte("lead-lead-lead-lead-lead-lead-32"))
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(pendingCapPolicy, lead.Public()),
		Server: "demo", Grants: []string{"ask"}})
	ctx := context.Background()
	subject := w.Agent.Public().String()
	setCount := func(n uint64) {
		t.Helper()
		if err := w.Store.Update(ctx, func(tx kernel.Tx) error { return tx.SetCounter(kernel.PendingKey(subject), n) }); err != nil {
			t.Fatal(err)
		}
	}
	submit := func() *kernel.Outcome { t.Helper(); return w.Submit(t, "echo", `{}`, "") }
	for range 2 {
		if out := submit(); out.Status != kernel.StatusPendingApproval {
			t.Fatalf("want parked, got %s", out.Status)
		}
	}

	// Too low: as if an older build had parked both uncounted.
	setCount(0)
	if out := submit(); out.Status != kernel.StatusPendingApproval {
		t.Fatalf("premise: with the count at 0 a third call parks; got %s", out.Status)
	}
	setCount(0)
	if err := w.Kernel.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if out := submit(); out.Status != kernel.StatusDenied || out.Guard != kernel.GuardPendingCap || !strings.Contains(out.Reason, "3 approval requests waiting") {
		t.Fatalf("after the recount: %s by %q (%s)", out.Status, out.Guard, out.Reason)
	}

	// Too high: an older build ends every waiting request without taking
	// it off the count (request and call in one plain store commit).
	pending, err := w.Kernel.ListPending(kernel.PendingFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range pending {
		if err := w.Store.Update(ctx, func(tx kernel.Tx) error {
			req.Status = approval.StatusCancelled
			req.Resolution = &approval.Resolution{Outcome: approval.StatusCancelled, Reason: "ended by an older build", CallStatus: kernel.StatusCancelled}
			rec, err := tx.Call(req.RequestID)
			if err != nil {
				return err
			}
			rec.Status = kernel.StatusCancelled
			if err := tx.PutCall(rec); err != nil {
				return err
			}
			return tx.PutApproval(req)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if out := submit(); out.Status != kernel.StatusDenied || out.Guard != kernel.GuardPendingCap {
		t.Fatalf("premise: nothing waits, yet the stale count of 3 refuses the agent; got %s", out.Status)
	}
	if err := w.Kernel.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if out := submit(); out.Status != kernel.StatusPendingApproval {
			t.Fatalf("call %d after the recount: %s by %q (%s): nothing was waiting", i+1, out.Status, out.Guard, out.Reason)
		}
	}
	if out := submit(); out.Guard != kernel.GuardPendingCap {
		t.Fatalf("the cap holds again after the recount; got %s by %q", out.Status, out.Guard)
	}
}
