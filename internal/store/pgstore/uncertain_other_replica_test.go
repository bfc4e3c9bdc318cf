package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A replica whose allow decision's commit failed (maybe durable) keeps the
// call in its sweep's care; when that commit in fact never happened and
// the agent's retry is decided by ANOTHER, live replica, the first must
// leave that replica's call alone. Its sweep used to take any dispatching
// record of the request id for its own: for an at_most_once tool it
// settled the call "unknown: chiod stopped while the call was in flight"
// while the other replica was delivering it, so the tool's success was
// refused as a conflict, its agent was told "outcome unknown", and the log
// said a live delivery had been cut short (an at_least_once call was sent
// a second time instead).
func TestUncertainDecisionSweepLeavesAnotherReplicasCall(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	src := strings.Replace(fmt.Sprintf(replicaPolicy, a.Public(), b.Public()),
		`transport = "builtin"`, "transport = \"builtin\"\ndelivery = \"at_most_once\"", 1)
	p, err := policy.Parse([]byte(src), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Database(t)
	disp := &gateDispatcher{gate: make(chan struct{}), calls: map[string]int{}}
	stA := &lostAnswerStore{Store: openPG(t, dsn)}
	kA := startKernel(t, p, stA, stA.Store, disp, clock.NewFake(time.Now()))
	stB := openPG(t, dsn)
	kB := startKernel(t, p, stB, stB, disp, clock.NewFake(time.Now()))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := kA.IssueCapability(agent.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", time.Now())

	// Replica A: the decision's commit fails before reaching the database.
	stA.fail.Store(true)
	first := *call
	if _, err := kA.Submit(context.Background(), &first); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("A: want ErrOutcomeUnknown, got %v", err)
	}
	// The agent retries on replica B, which decides and delivers it.
	type result struct {
		out *kernel.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		retry := *call
		out, err := kB.Submit(context.Background(), &retry)
		done <- result{out, err}
	}()
	stored := func() *kernel.CallRecord {
		var rec *kernel.CallRecord
		stB.View(func(tx kernel.ReadTx) error { rec, _ = tx.Call(call.RequestID); return nil })
		return rec
	}
	eventually(t, "B's allow decision", func() bool { r := stored(); return r != nil && r.Status == kernel.StatusDispatching })
	// B's tool is still working; A's sweep (every second) looks meanwhile.
	time.Sleep(2*kernel.SweepInterval + 500*time.Millisecond)
	if r := stored(); r.Status != kernel.StatusDispatching {
		t.Errorf("while live replica B delivered the call, replica A settled it: %s, execution %q (%s)", r.Status, r.Execution, r.ToolError)
	}
	close(disp.gate)
	r := <-done
	rec := stored()
	disp.mu.Lock()
	n := disp.calls[call.RequestID]
	disp.mu.Unlock()
	if r.err != nil || rec.Execution != kernel.ExecutionSucceeded || n != 1 {
		t.Fatalf("B answered %+v (%v); recorded execution %q (%s); the tool ran %d time(s): want succeeded, once",
			r.out, r.err, rec.Execution, rec.ToolError, n)
	}
}
