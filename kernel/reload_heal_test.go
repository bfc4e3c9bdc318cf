package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// failOnceStore fails the next Update after arm() without committing it
// (an fsync error: the store then heals); every other Update goes through.
type failOnceStore struct {
	kernel.Store
	armed atomic.Bool
}

func (s *failOnceStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.armed.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: commit failed (fsync)", kernel.ErrUnavailable)
	}
	return s.Store.Update(ctx, fn)
}

// A reload reconciles every parked request with the new approvers
// (ApplyPolicy). When the store fails that reconcile's commit and then
// heals, chiod's OnHeal runs RecoverAfterHeal, which must finish what the
// failure left undone, as a restart's Recover does: here the Finance Lead
// left and the CFO now decides refunds. Left as it was, the request kept
// naming the Finance Lead, the CFO was never told of it, and its deadline
// denied it as unanswered, until chiod happened to restart.
func TestHealFinishesAReloadsFailedReconcile(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	st := &failOnceStore{}
	text := fmt.Sprintf(crashPolicy, financeLead.Public(), "deny")
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: text, Dispatcher: &argsDispatcher{}, Clock: fake,
		Server: "pay", Grants: []string{"refunds"}, CapabilityTTL: 24 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { st.Store = s; return st }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	id := out.ApprovalRequestID
	eventually(t, "the Finance Lead to be told", func() bool {
		req, err := w.Kernel.Approval(id)
		return err == nil && req.Notified > req.Tier
	})
	cfoDecides, err := policy.Parse([]byte(strings.Replace(text, financeLead.Public().String(), cfo.Public().String(), 1)), "cfo.toml")
	if err != nil {
		t.Fatal(err)
	}
	st.armed.Store(true) // the reconcile's commit fails
	if err := w.Kernel.ApplyPolicy(ctx, cfoDecides); err != nil && !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatal(err)
	}
	if st.armed.Load() {
		t.Fatal("the reload committed nothing: the test no longer fails its reconcile")
	}
	events, cancel, ok := w.Kernel.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	defer cancel()
	// The store heals (chiod's OnHeal).
	if err := w.Kernel.RecoverAfterHeal(ctx); err != nil {
		t.Fatal(err)
	}
	req, err := w.Kernel.Approval(id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(req.TrustedApprovers, []string{cfo.Public().String()}) {
		t.Errorf("after the heal the request names approvers %v, not the CFO the policy in force names", req.TrustedApprovers)
	}
	select {
	case e := <-events:
		if e.Approval == nil || e.Approval.ApprovalID != id {
			t.Errorf("after the heal: event %s, want the request announced to the CFO", e.Type)
		}
	case <-time.After(10 * time.Second): // a failure's bound only
		t.Error("after the heal the CFO, whom the reload made its approver, was never told of the request")
	}
}
