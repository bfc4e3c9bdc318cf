package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A call parked with auto_approve_advisory reaches its deadline, and the
// advisory's check (its first commit) passes. Before the kernel's vote
// commits, a reload adds the SRE as an approver, the advisory still in
// force: the SRE was never told of the request, so the reload's reconcile
// marks the tier untold and gives it the tier's full time from now. The
// kernel's vote must honour that new deadline; it once approved at the old
// one, so the call ran on the advisory with the SRE never asked.
func TestAdvisoryVoteWaitsForApproversAReloadAdded(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	st := &afterUpdateStore{}
	disp := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "auto_approve_advisory"), Dispatcher: disp,
		Clock: fake, Server: "pay", Grants: []string{"refunds"}, CapabilityTTL: 24 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	withSRE, err := policy.Parse([]byte(fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "auto_approve_advisory")+
		fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"SRE\"\n", sre.Public())), "with-sre.toml")
	if err != nil {
		t.Fatal(err)
	}
	events, cancel, ok := w.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	defer cancel()
	reloaded := make(chan error, 1)
	st.hook = func() { reloaded <- w.Kernel.ApplyPolicy(ctx, withSRE) } // after the advisory's check
	st.armed.Store(true)
	fake.Advance(601 * time.Second)
	var told *approval.Request
	for told == nil {
		select {
		case e := <-events:
			if e.Approval == nil {
				continue
			}
			if e.Type == kernel.EventApprovalResolved {
				t.Fatalf("the advisory resolved the request (%s) before the SRE, added by the reload, had any time; the tool ran %d time(s)",
					e.Approval.Status, len(disp.got(out.RequestID)))
			}
			if e.Type == kernel.EventApprovalRequested {
				told = e.Approval
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the reload did not tell the SRE of the request")
		}
	}
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if want := fake.Now().Unix() + 600; told.ExpiresAt < want {
		t.Fatalf("the SRE was told with deadline %d, want at least %d (the tier's time)", told.ExpiresAt, want)
	}
	// Nothing resolves the request before its new deadline.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		select {
		case e := <-events:
			if e.Approval != nil && e.Type == kernel.EventApprovalResolved {
				t.Fatalf("the advisory resolved the request (%s) before the SRE had the tier's time; the tool ran %d time(s)",
					e.Approval.Status, len(disp.got(out.RequestID)))
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
	r, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil || r.Status != approval.StatusPending || len(disp.got(out.RequestID)) != 0 {
		t.Fatalf("before the new deadline: request %s (%v), tool ran %d time(s)", r.Status, err, len(disp.got(out.RequestID)))
	}
	// At the new deadline, with nobody having answered, the advisory applies.
	fake.Advance(601 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Approval != nil && e.Type == kernel.EventApprovalResolved {
				if e.Approval.Status != approval.StatusApproved {
					t.Fatalf("at the new deadline: %s", e.Approval.Status)
				}
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the advisory did not apply at the new deadline")
		}
	}
}
