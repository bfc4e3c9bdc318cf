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

// readsDownStore fails every read while down (the database unreachable),
// reading nothing.
type readsDownStore struct {
	*pgstore.Store
	down atomic.Bool
}

func (s *readsDownStore) View(fn func(kernel.ReadTx) error) error {
	if s.down.Load() {
		return fmt.Errorf("%w: connection refused", kernel.ErrUnavailable)
	}
	return s.Store.View(fn)
}

// A reload puts its policy in force and then lists the parked requests to
// reconcile them. When the database cannot be read for that list, the
// policy is in force all the same, but no request was reconciled and,
// unlike a reconcile whose commit failed (TestSweepFinishesAReloadsFailed
// Reconcile), nothing marked them to be: on PostgreSQL nothing heals a
// store, so each request kept the approver the reload removed, the one it
// added was never told, and its deadline denied the call as unanswered,
// until the replica restarted. The replica's sweep reconciles them once
// the database answers.
func TestSweepFinishesAReloadWhosePendingListFailed(t *testing.T) {
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
	st := &readsDownStore{Store: pg}
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
	st.down.Store(true)
	err = k.ApplyPolicy(ctx, parse(b))
	st.down.Store(false)
	if !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("the reload read its pending requests: %v (the test no longer fails that read)", err)
	}
	if g, _ := k.Policy().Grant("deploys"); g == nil || g.Approval.Approvers[0].PublicKey.String() != b.Public().String() {
		t.Fatal("the reload's policy is not in force: the test no longer tests a reload that went halfway")
	}
	// The database is back; the sweep runs every second.
	eventually(t, "the request to name the approver the reload made (B), not the one it removed (A)", func() bool {
		req, err := k.Approval(out.ApprovalRequestID)
		return err == nil && slices.Equal(req.TrustedApprovers, []string{b.Public().String()})
	})
}
