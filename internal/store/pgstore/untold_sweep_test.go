package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

const untoldAdvisoryPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "adv"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 10
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "A"
`

// dyingStore: the park commit lands, then the replica is gone (every later
// update fails), like a replica killed between its park and its announce.
type dyingStore struct {
	kernel.Store
	n, parkAt atomic.Int64
}

func (s *dyingStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	n := s.n.Add(1)
	if at := s.parkAt.Load(); at > 0 && n > at {
		return fmt.Errorf("%w: replica gone", kernel.ErrUnavailable)
	}
	return s.Store.Update(ctx, fn)
}

type eventNotifier struct {
	mu   sync.Mutex
	told map[string][]string
}

func (n *eventNotifier) Notify(event string, req *approval.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.told[req.ApprovalID] = append(n.told[req.ApprovalID], event)
}

// With replicas, a replica that dies between its park commit and its
// announce may never start again (scaled down, node lost); the survivors'
// sweep fired the deadline of its request (auto_approve_advisory) without
// ever announcing it: the tool ran and no human was asked. Expire now
// announces an untold tier first and gives it the tier's full time.
func TestSweepAnnouncesAParkNobodyWasToldOfBeforeAnyDeadlineAction(t *testing.T) {
	dsn := pgtest.Database(t)
	a := keys.FromSeed([]byte("approver-a-approver-a-approver-a"))
	p, err := policy.Parse([]byte(fmt.Sprintf(untoldAdvisoryPolicy, a.Public())), "adv.toml")
	if err != nil {
		t.Fatal(err)
	}
	disp := &countingDispatcher{calls: map[string]int{}}
	key := storetest.Key()
	// The survivor: a live replica, started before the park.
	st2 := openPG(t, dsn)
	clk2 := clock.NewFake(time.Unix(1_800_000_000, 0))
	told2 := &eventNotifier{told: map[string][]string{}}
	k2, err := kernel.New(kernel.Config{Key: key, Policy: p, Store: st2, Dispatcher: disp, Clock: clk2, Notifier: told2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k2.Close)
	if err := k2.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The replica that parks and dies before its announce reaches anyone.
	ds := &dyingStore{Store: openPG(t, dsn)}
	clk1 := clock.NewFake(time.Unix(1_800_000_000, 0))
	k1, err := kernel.New(kernel.Config{Key: key, Policy: p, Store: ds, Dispatcher: disp, Clock: clk1, Notifier: kernel.Notifier(nil)})
	if err != nil {
		t.Fatal(err)
	}
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k1.IssueCapability(agent.Public(), []string{"adv"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ds.parkAt.Store(2) // update 1: the standing-approval claim, 2: the park
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", clk1.Now())
	_, err = k1.Submit(context.Background(), call)
	if err != nil && !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatal(err)
	}
	k1.Close()
	rec, err := k2.Call(call.RequestID)
	if err != nil || rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("parked call: %+v %v", rec, err)
	}
	req, _ := k2.Approval(rec.ApprovalID)
	if req.Notified != 0 {
		t.Fatalf("setup: Notified = %d", req.Notified)
	}
	// The deadline passes; the survivor's sweep fires it. Nobody was told,
	// so instead of auto-approving, it announces the request and gives its
	// approvers the tier's full time.
	clk2.Advance(11 * time.Second)
	eventually(t, "the late announcement", func() bool {
		told2.mu.Lock()
		defer told2.mu.Unlock()
		return len(told2.told[rec.ApprovalID]) > 0
	})
	r, err := k2.Approval(rec.ApprovalID)
	if err != nil || r.Status != approval.StatusPending || r.ExpiresAt < clk2.Now().Unix()+9 {
		t.Fatalf("after the late announcement: %+v %v (want pending, deadline ~10 s from now)", r, err)
	}
	disp.mu.Lock()
	ran := disp.calls[call.RequestID]
	disp.mu.Unlock()
	told2.mu.Lock()
	told := told2.told[rec.ApprovalID]
	told2.mu.Unlock()
	if ran != 0 || told[0] != kernel.EventApprovalRequested {
		t.Fatalf("a request no approver was ever told of: tool ran %d time(s), the survivor's channels were told %v", ran, told)
	}
}
