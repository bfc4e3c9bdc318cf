package kernel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// insideUpdateStore runs hook once, inside the next Update once armed:
// after the kernel's function has run in the transaction, before it
// commits.
type insideUpdateStore struct {
	kernel.Store
	hook atomic.Pointer[func()]
}

func (s *insideUpdateStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	h := s.hook.Swap(nil)
	if h == nil {
		return s.Store.Update(ctx, fn)
	}
	return s.Store.Update(ctx, func(tx kernel.Tx) error {
		err := fn(tx)
		(*h)()
		return err
	})
}

// A request escalates at its tier-0 deadline while a reload lands that adds
// the SRE to tier 1. The escalation read the policy inside its transaction
// and committed with no check that it was still in force; the reload's
// reconcile, which read the request before that commit (still at tier 0,
// unchanged by the reload), did nothing. The request went to tier 1 with
// the replaced policy's approvers: the SRE, an approver of tier 1 under the
// policy in force, was never told of it, and its deadline could run out
// (or, with auto_approve_advisory, run the call) with the SRE never asked.
func TestEscalationRacingAReloadTellsTheApproverItAdds(t *testing.T) {
	text := fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "escalate")
	head := text[:strings.LastIndex(text, "[[grants.approval.approvers]]")]
	escalating, err := policy.Parse([]byte(head+fmt.Sprintf(escalatingPolicy, financeLead.Public(), cfo.Public())), "escalate.toml")
	if err != nil {
		t.Fatal(err)
	}
	sreBlock := fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"SRE\"\n", sre.Public())
	withSRE := strings.Replace(fmt.Sprintf(escalatingPolicy, financeLead.Public(), cfo.Public()), "[grants.approval.escalation]", sreBlock+"[grants.approval.escalation]", 1)
	withSRE = strings.Replace(withSRE, `approvers = ["CFO"]`, `approvers = ["CFO", "SRE"]`, 1)
	reloadedPolicy, err := policy.Parse([]byte(head+withSRE), "escalate-sre.toml")
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	st := &insideUpdateStore{}
	w := testkit.NewWorld(t, testkit.Options{Policy: escalating, Dispatcher: &argsDispatcher{}, Clock: fake, Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	events, cancel, ok := w.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	defer cancel()
	// The reload starts inside the escalation's transaction (its first
	// commit at the deadline). Where the escalation holds reloads off until
	// it commits, the reload waits; the hook lets the commit go on after a
	// while rather than deadlock.
	reloaded := make(chan error, 1)
	hook := func() {
		done := make(chan error, 1)
		go func() { done <- w.Kernel.ApplyPolicy(ctx, reloadedPolicy) }()
		select {
		case err := <-done:
			reloaded <- err
		case <-time.After(500 * time.Millisecond):
			go func() { reloaded <- <-done }()
		}
	}
	st.hook.Store(&hook)
	fake.Advance(601 * time.Second)
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e := <-events:
			if e.Approval != nil && e.Approval.Tier == 1 && e.Approval.Status == approval.StatusPending &&
				slices.Contains(e.Approval.TrustedApprovers, sre.Public().String()) {
				if err := <-reloaded; err != nil {
					t.Fatal(err)
				}
				r, err := w.Kernel.Approval(out.ApprovalRequestID)
				if err != nil || !slices.Contains(r.TrustedApprovers, sre.Public().String()) || r.Notified <= r.Tier {
					t.Fatalf("stored after the reload: %+v (%v)", r, err)
				}
				return
			}
		case <-timeout:
			r, err := w.Kernel.Approval(out.ApprovalRequestID)
			t.Fatalf("the SRE, a tier-1 approver under the policy in force, was never told of the escalated request: stored tier %d, approvers %d (SRE among them: %v), told %v (err %v)",
				r.Tier, len(r.TrustedApprovers), slices.Contains(r.TrustedApprovers, sre.Public().String()), r.Notified > r.Tier, err)
		}
	}
}
