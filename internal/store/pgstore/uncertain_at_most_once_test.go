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

// An at_most_once call whose allow decision's commit is in the database
// but was reported failed (COMMIT's answer lost) was never sent by this
// replica, which sends only after a decision commits: its sweep delivers
// it once, as its first attempt, rather than settling it "unknown" as if
// a delivery had been cut short.
func TestDurableAtMostOnceDecisionReportedFailedIsDeliveredOnce(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(replicaPolicy, keys.FromSeed([]byte("approver-a-approver-a-approver-a")).Public(),
		keys.FromSeed([]byte("approver-b-approver-b-approver-b")).Public()),
		`transport = "builtin"`, "transport = \"builtin\"\ndelivery = \"at_most_once\"", 1)
	p, err := policy.Parse([]byte(src), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	st := &lostAnswerStore{Store: openPG(t, pgtest.Database(t))}
	disp := &countingDispatcher{calls: map[string]int{}}
	clk := clock.NewFake(time.Now())
	k := startKernel(t, p, st, st.Store, disp, clk)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"echo"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", clk.Now())
	st.lose.Store(true)
	if _, err := k.Submit(context.Background(), call); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("a decision commit reported failed: want ErrOutcomeUnknown, got %v", err)
	}
	eventually(t, "the durable decision's call settled", func() bool {
		rec, err := k.Call(call.RequestID)
		return err == nil && rec.Status == kernel.StatusAllowed && rec.Execution != ""
	})
	rec, _ := k.Call(call.RequestID)
	disp.mu.Lock()
	n := disp.calls[call.RequestID]
	disp.mu.Unlock()
	if n != 1 || rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("delivered %d times, execution %q (%s); want once, succeeded: this replica never sent it", n, rec.Execution, rec.ToolError)
	}
}
