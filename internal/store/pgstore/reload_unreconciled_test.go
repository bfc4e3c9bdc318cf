package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// failViewsStore fails every View while fail is set (the database
// unreachable for reads); Updates go through.
type failViewsStore struct {
	*failNextStore
	fail atomic.Bool
}

func (s *failViewsStore) View(fn func(kernel.ReadTx) error) error {
	if s.fail.Load() {
		return fmt.Errorf("%w: connection refused", kernel.ErrUnavailable)
	}
	return s.Store.View(fn)
}

// reloadFixture parks one call needing one approval of a, and returns
// the kernel, its store and a policy naming approver b instead.
func reloadFixture(t *testing.T) (*kernel.Kernel, *failViewsStore, string, keys.PrivateKey, *policy.Policy) {
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
	st := &failViewsStore{failNextStore: &failNextStore{Store: pg}}
	k := startKernel(t, parse(a), st, pg, &countingDispatcher{calls: map[string]int{}}, clk)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := k.Submit(context.Background(), testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"deploy":"prod"}`, "", clk.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	eventually(t, "the approver to be told", func() bool {
		req, err := k.Approval(out.ApprovalRequestID)
		return err == nil && req.Notified > req.Tier
	})
	return k, st, out.ApprovalRequestID, b, parse(b)
}

// A reload whose list of pending requests cannot be read (the database
// blinks) put the policy in force but reconciled nothing: the replica's
// sweep must reconcile them once the database answers, as it does when a
// reconcile's commit fails. Otherwise the requests keep the approvers the
// reload removed until a restart.
func TestSweepReconcilesAfterAReloadCouldNotListPendingRequests(t *testing.T) {
	k, st, id, b, next := reloadFixture(t)
	st.fail.Store(true)
	err := k.ApplyPolicy(context.Background(), next)
	st.fail.Store(false)
	if err == nil {
		t.Fatal("ApplyPolicy with the pending requests unreadable: nil error")
	}
	eventually(t, "the request to name the approver the reload made (B)", func() bool {
		req, err := k.Approval(id)
		return err == nil && slices.Equal(req.TrustedApprovers, []string{b.Public().String()})
	})
}

// A reload whose reconcile of a request fails says so to its caller
// (chiod logs it with "policy reloaded"), naming the request: the policy
// is in force, but that request is not reconciled with it yet.
func TestReloadNamesTheRequestsItCouldNotReconcile(t *testing.T) {
	k, st, id, _, next := reloadFixture(t)
	st.failNextStore.fail.Store(true) // the reconcile's commit
	err := k.ApplyPolicy(context.Background(), next)
	if st.failNextStore.fail.Load() {
		t.Fatal("the reload committed nothing: the test no longer fails its reconcile")
	}
	if err == nil || !strings.Contains(err.Error(), id) {
		t.Fatalf("ApplyPolicy whose reconcile of %s failed: %v; want an error naming it", id, err)
	}
}
