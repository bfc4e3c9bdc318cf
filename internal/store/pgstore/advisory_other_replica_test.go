package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// heldStore holds its next Update (armed by hold) before it reaches the
// database until released: a vote's commit slow to start (a busy commit
// queue, a reload holding the policy lock).
type heldStore struct {
	*pgstore.Store
	hold chan chan struct{} // the next Update signals on at, then waits
}

func (s *heldStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	select {
	case release := <-s.hold:
		release <- struct{}{}
		<-release
	default:
	}
	return s.Store.Update(ctx, fn)
}

// A human denial is presented to replica B one second before the deadline
// (approval.Verify judges it at its arrival: in time), and its commit is
// slow to start. Replica A's timer fires the deadline meanwhile, with
// timeout_action = auto_approve_advisory. The advisory approval is for
// calls nobody decided: it must not overtake a denial that arrived in
// time on another replica. A kernel's deadline waits only for the votes
// presented to itself (arrivals.go), so A auto-approved, the call ran, and
// B's approver was told the request had been resolved before their vote.
func TestAdvisoryWaitsForADenialThatArrivedInTimeOnAnotherReplica(t *testing.T) {
	dsn := pgtest.Database(t)
	a := keys.FromSeed([]byte("approver-a-approver-a-approver-a"))
	p, err := policy.Parse([]byte(fmt.Sprintf(untoldAdvisoryPolicy, a.Public())), "adv.toml")
	if err != nil {
		t.Fatal(err)
	}
	disp := &countingDispatcher{calls: map[string]int{}}
	clkA := clock.NewFake(time.Unix(1_800_000_000, 0))
	stA := openPG(t, dsn)
	kA := startKernel(t, p, stA, stA, disp, clkA)
	clkB := clock.NewFake(time.Unix(1_800_000_000, 0))
	pgB := openPG(t, dsn)
	stB := &heldStore{Store: pgB, hold: make(chan chan struct{}, 1)}
	kB := startKernel(t, p, stB, pgB, disp, clkB)

	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := kA.IssueCapability(agent.Public(), []string{"adv"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", clkA.Now())
	out, err := kA.Submit(context.Background(), call)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	id := out.ApprovalRequestID

	// The denial reaches B a second before the deadline; its commit waits.
	clkB.Advance(9 * time.Second)
	release := make(chan struct{})
	stB.hold <- release
	deny := testkit.SignToken(t, kB, clkB.Now(), id, a, approval.DecisionDenied, func(tok *approval.Token) { tok.Note = "no" })
	done := make(chan error, 1)
	go func() { _, err := kB.Respond(context.Background(), id, deny, "", "test"); done <- err }()
	<-release

	// A's deadline fires while B's denial is on its way to the database.
	// It gets every chance to run ahead of the denial (it did: the request
	// was approved before the denial was released).
	clkA.Advance(10 * time.Second)
	for i := 0; i < 100; i++ {
		if r, _ := kA.Approval(id); r.Status != approval.StatusPending {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	release <- struct{}{}
	verr := <-done
	eventually(t, "request resolved", func() bool { r, _ := kA.Approval(id); return r.Status != approval.StatusPending })
	r, _ := kA.Approval(id)
	rec, _ := kA.Call(out.RequestID)
	disp.mu.Lock()
	ran := disp.calls[out.RequestID]
	disp.mu.Unlock()
	if ran != 0 || r.Status != approval.StatusDenied || verr != nil {
		decided := ""
		if r.Resolution != nil {
			decided = r.Resolution.DecidedBy
		}
		t.Fatalf("A denied this call on replica B a second before its deadline, yet replica A's advisory auto-approval "+
			"ran it: dispatched %d, call %s, request %s (decided by %q); the denial was answered %v", ran, rec.Status, r.Status, decided, verr)
	}
}
