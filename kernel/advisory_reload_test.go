package kernel_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// afterUpdateStore runs hook once, right after the first Update that
// completes once it is armed.
type afterUpdateStore struct {
	kernel.Store
	armed atomic.Bool
	hook  func()
}

func (s *afterUpdateStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	err := s.Store.Update(ctx, fn)
	if s.armed.CompareAndSwap(true, false) {
		s.hook()
	}
	return err
}

// The advisory auto-approval takes two transactions at the deadline:
// the check (advisoryMayDecide), then the kernel's vote. A reload between
// them that ends auto_approve_advisory (the platform team now wants such
// calls denied) must be honoured by the vote: the call is denied at the
// deadline, never run on the old policy's say-so.
func TestAdvisoryVoteHonoursAReloadAfterItsCheck(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	st := &afterUpdateStore{}
	disp := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "auto_approve_advisory"), Dispatcher: disp,
		Clock: fake, Server: "pay", Grants: []string{"refunds"}, CapabilityTTL: 24 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	out, err := w.Kernel.Submit(context.Background(), c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	var denyPolicy *policy.Policy = quorumPolicy(t, 1, 1, "deny")
	st.hook = func() { w.Kernel.SetPolicy(denyPolicy) } // the reload lands after the advisory check
	st.armed.Store(true)
	fake.Advance(601 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := w.Kernel.Approval(out.ApprovalRequestID); err == nil && r.Status != approval.StatusPending {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	r, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil || r.Status != approval.StatusExpired || len(disp.got(c.RequestID)) != 0 {
		t.Fatalf("after a reload to timeout_action = deny: request %s (%v), tool ran %d time(s)", r.Status, err, len(disp.got(c.RequestID)))
	}
}
