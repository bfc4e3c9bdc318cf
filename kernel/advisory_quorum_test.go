package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A call parked under quorum = 2 with auto_approve_advisory reaches its
// deadline; the advisory's first commit is done when a reload lands that
// ends the advisory (the platform team now escalates such calls to the
// CFO) and, for calls parked from now on, lowers quorum to 1. The
// advisory's first commit used to store quorum 1 on the request, so the
// reload's loosening (max(stored, policy) = 1) applied to a call parked
// before it: after the escalation, one approval ran a call parked needing
// two.
func TestAdvisoryEndedByAReloadKeepsTheParkedQuorum(t *testing.T) {
	text := fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "escalate")
	head := text[:strings.LastIndex(text, "[[grants.approval.approvers]]")]
	escalating, err := policy.Parse([]byte(head+fmt.Sprintf(escalatingPolicy, financeLead.Public(), cfo.Public())), "escalate.toml")
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	st := &afterUpdateStore{}
	disp := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 2, 1, "auto_approve_advisory"), Dispatcher: disp,
		Clock: fake, Server: "pay", Grants: []string{"refunds"}, CapabilityTTL: 24 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	reloaded := make(chan error, 1)
	st.hook = func() { reloaded <- w.Kernel.ApplyPolicy(ctx, escalating) } // after the advisory's first commit
	st.armed.Store(true)
	events, cancel, ok := w.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	defer cancel()
	fake.Advance(601 * time.Second)
	for escalated := false; !escalated; {
		select {
		case e := <-events:
			if e.Approval != nil && e.Type == kernel.EventApprovalResolved {
				t.Fatalf("the deadline ended the request (%s) instead of escalating it", e.Approval.Status)
			}
			escalated = e.Approval != nil && e.Type == kernel.EventApprovalEscalated
		case <-time.After(5 * time.Second):
			t.Fatal("the deadline did not escalate the request")
		}
	}
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	// The CFO, told at tier 1, approves: one approval of the two the call
	// was parked under.
	tok := testkit.SignToken(t, w.Kernel, fake.Now(), out.ApprovalRequestID, cfo, approval.DecisionApproved, nil)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != approval.StatusPending || res.Quorum != 2 || len(disp.got(out.RequestID)) != 0 {
		t.Fatalf("a call parked under quorum = 2 was resolved %q by one approval (quorum %d) after the reload that ended its advisory; the tool ran %d time(s)",
			res.Outcome, res.Quorum, len(disp.got(out.RequestID)))
	}
	// The second approval (the Finance Lead still decides at tier 1)
	// resolves it.
	tok = testkit.SignToken(t, w.Kernel, fake.Now(), out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	if res, err = w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("second approval: %+v %v", res, err)
	}
}
