package pgstore_test

import (
	"context"
	"fmt"
	"sync"
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

const pendingCapPolicy = `
[kernel]
max_pending_approvals_per_agent = 5

[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "ask"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
[[grants.approval.approvers]]
public_key = "%s"
display_name = "A"
`

// The per-agent cap on waiting approval requests holds across replicas:
// one agent's calls racing through two kernels on one database park
// exactly the cap, and the rest are denied by it (the count is a counter
// row that each park locks in its own transaction).
func TestPendingCapIsExactAcrossReplicas(t *testing.T) {
	approver := keys.FromSeed([]byte("approver-a-approver-a-approver-a"))
	p, err := policy.Parse([]byte(fmt.Sprintf(pendingCapPolicy, approver.Public())), "cap.toml")
	if err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Database(t)
	var ks []*kernel.Kernel
	var stores []*pgstore.Store
	var clk *clock.Fake
	for range 2 {
		st := openPG(t, dsn)
		stores = append(stores, st)
		clk = clock.NewFake(time.Now())
		ks = append(ks, startKernel(t, p, st, st, &countingDispatcher{calls: map[string]int{}}, clk))
	}
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := ks[0].IssueCapability(agent.Public(), []string{"ask"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 24
	var parked, capped atomic.Int64
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := ks[i%2]
			out, err := k.Submit(context.Background(), testkit.NewCall(t, agent, capRaw, "demo", "echo", fmt.Sprintf(`{"n":%d}`, i), "", clk.Now()))
			switch {
			case err != nil:
				t.Error(err)
			case out.Status == kernel.StatusPendingApproval:
				parked.Add(1)
			case out.Status == kernel.StatusDenied && out.Guard == kernel.GuardPendingCap:
				capped.Add(1)
			default:
				t.Errorf("unexpected outcome %+v", out)
			}
		}()
	}
	wg.Wait()
	if parked.Load() != 5 || capped.Load() != calls-5 {
		t.Fatalf("%d parked and %d denied by the cap of %d calls; want 5 and %d", parked.Load(), capped.Load(), calls, calls-5)
	}
	pending, err := ks[1].ListPending(kernel.PendingFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 5 {
		t.Fatalf("%d requests waiting, want 5", len(pending))
	}

	// A start recounts: a count nothing waiting backs (another agent's,
	// left by an older build) is zeroed; this agent's stays 5.
	ghost := "pending\x00ed25519:ghost"
	if err := stores[0].Update(context.Background(), func(tx kernel.Tx) error { return tx.SetCounter(ghost, 7) }); err != nil {
		t.Fatal(err)
	}
	if err := ks[1].Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	if err := stores[1].CountersWithPrefix("pending\x00", func(k string, v uint64) bool { counts[k] = v; return true }); err != nil {
		t.Fatal(err)
	}
	if counts[ghost] != 0 || counts["pending\x00"+agent.Public().String()] != 5 || len(counts) != 2 {
		t.Fatalf("counts after a start: %v", counts)
	}
}
