package pgstore_test

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
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// failNextStore fails the next Update after arm, committing nothing (the
// database unreachable for one commit); the others go through.
type failNextStore struct {
	*pgstore.Store
	fail atomic.Bool
}

func (s *failNextStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.fail.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: connection refused", kernel.ErrUnavailable)
	}
	return s.Store.Update(ctx, fn)
}

// A reload reconciles the parked requests with the new approvers. On
// PostgreSQL nothing heals a store (no OnHeal): when the database refuses
// the reconcile's commit, the replica's sweep must do it again once the
// database takes commits. Otherwise the request kept the approver the
// reload removed, the one it added was never told, and the deadline
// denied the call as unanswered, until the replica restarted.
func TestSweepFinishesAReloadsFailedReconcile(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	parse := func(approver keys.PrivateKey) *policy.Policy {
		lines := fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Approver\"\n", approver.Public())
		p, err := policy.Parse([]byte(strings.Replace(fmt.Sprintf(quorumTwoPolicy, lines), "quorum = 2", "quorum = 1", 1)), "q.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dsn := pgtest.Database(t)
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	pg := openPG(t, dsn)
	st := &failNextStore{Store: pg}
	k := startKernel(t, parse(a), st, pg, &countingDispatcher{calls: map[string]int{}}, clk)
	ctx := context.Background()
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := k.Submit(ctx, testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"deploy":"prod"}`, "", clk.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	eventually(t, "the approver to be told", func() bool {
		req, err := k.Approval(out.ApprovalRequestID)
		return err == nil && req.Notified > req.Tier
	})
	st.fail.Store(true) // the reconcile's commit
	if err := k.ApplyPolicy(ctx, parse(b)); err != nil && !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatal(err)
	}
	if st.fail.Load() {
		t.Fatal("the reload committed nothing: the test no longer fails its reconcile")
	}
	// The database is back; the sweep runs every second.
	eventually(t, "the request to name the approver the reload made (B), not the one it removed (A)", func() bool {
		req, err := k.Approval(out.ApprovalRequestID)
		return err == nil && slices.Equal(req.TrustedApprovers, []string{b.Public().String()})
	})
}
