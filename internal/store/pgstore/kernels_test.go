package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// Kernels sharing one database, in-process: the kernel-level rules that
// only replicas exercise.

const replicaPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"

[[grants]]
id = "esc"
server = "demo"
tool = "delete_file"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 10
timeout_action = "escalate"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "A"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "B"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["A"]
timeout_seconds = 10
[[grants.approval.escalation.tiers]]
approvers = ["B"]
timeout_seconds = 10
[[grants.approval.escalation.tiers]]
approvers = ["A", "B"]
timeout_seconds = 10
`

// countingDispatcher counts dispatches per request id.
type countingDispatcher struct {
	mu    sync.Mutex
	calls map[string]int
}

func (d *countingDispatcher) Dispatch(_ context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[r.RequestID]++
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

type replica struct {
	k     *kernel.Kernel
	store *pgstore.Store
	clock *clock.Fake
}

// kernels starts n kernels on one database, each with its own fake clock
// (a clock that is never advanced is a replica whose timers never fire).
func kernels(t *testing.T, n int, disp kernel.Dispatcher) []replica {
	t.Helper()
	return kernelsOn(t, pgtest.Database(t), n, disp)
}

// kernelsOn is kernels on the database dsn.
func kernelsOn(t *testing.T, dsn string, n int, disp kernel.Dispatcher) []replica {
	t.Helper()
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	var out []replica
	for i := 0; i < n; i++ {
		st := openPG(t, dsn)
		clk := clock.NewFake(time.Unix(1_800_000_000, 0))
		out = append(out, replica{k: startKernel(t, p, st, st, disp, clk), store: st, clock: clk})
	}
	return out
}

// startKernel starts a kernel of policy p on store (pg, or a wrapper of
// it), relaying events through pg, and recovers it as chiod does.
func startKernel(t *testing.T, p *policy.Policy, store kernel.Store, pg *pgstore.Store, disp kernel.Dispatcher, clk clock.Clock) *kernel.Kernel {
	t.Helper()
	k, err := kernel.New(kernel.Config{Key: storetest.Key(), Policy: p, Store: store, Dispatcher: disp, Clock: clk, Relay: pg.Events()})
	if err != nil {
		t.Fatal(err)
	}
	pg.Events().Attach(k)
	t.Cleanup(k.Close)
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return k
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A request parked by a replica whose timers never fire escalates through
// its tiers on the others' sweeps, one tier per deadline however many
// replicas sweep, and ends with one deny receipt.
func TestDeadTimersEscalateOnceOnOthers(t *testing.T) {
	rs := kernels(t, 3, &countingDispatcher{calls: map[string]int{}})
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := rs[0].k.IssueCapability(agent.Public(), []string{"esc"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := rs[0].k.Submit(context.Background(), testkit.NewCall(t, agent, capRaw, "demo", "delete_file", `{"path":"/tmp/x"}`, "", rs[0].clock.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	tier := func() (int, string) {
		req, err := rs[1].k.Approval(out.ApprovalRequestID)
		if err != nil {
			t.Fatal(err)
		}
		return req.Tier, req.Status
	}
	// rs[0]'s clock stands still: only rs[1] and rs[2] see time pass.
	for want := 1; want <= 2; want++ {
		rs[1].clock.Advance(11 * time.Second)
		rs[2].clock.Advance(11 * time.Second)
		eventually(t, fmt.Sprintf("tier %d", want), func() bool { n, _ := tier(); return n == want })
		time.Sleep(2 * kernel.SweepInterval) // more sweeps: no second escalation
		if n, status := tier(); n != want || status != approval.StatusPending {
			t.Fatalf("after one deadline: tier %d (%s), want %d", n, status, want)
		}
	}
	rs[1].clock.Advance(11 * time.Second)
	rs[2].clock.Advance(11 * time.Second)
	eventually(t, "the terminal deny", func() bool { _, s := tier(); return s == approval.StatusExpired })
	time.Sleep(2 * kernel.SweepInterval)
	var verdicts []string
	err = rs[2].store.QueryReceipts(receipt.Query{Filter: receipt.Filter{RequestID: out.RequestID}, Decode: true},
		func(_ uint64, _ []byte, r *receipt.Receipt) bool {
			verdicts = append(verdicts, r.Decision.Verdict+"/"+r.Decision.Guard)
			return true
		})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(verdicts) != "[incomplete/ deny/approval-timeout]" {
		t.Fatalf("receipts %v, want one incomplete and one timeout deny", verdicts)
	}
}

// The same call sent to two replicas at once is decided once: both get
// the stored outcome, the tool runs once.
func TestDuplicateRequestAcrossReplicas(t *testing.T) {
	disp := &countingDispatcher{calls: map[string]int{}}
	rs := kernels(t, 2, disp)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := rs[0].k.IssueCapability(agent.Public(), []string{"echo"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		call := testkit.NewCall(t, agent, capRaw, "demo", "echo", fmt.Sprintf(`{"i":%d}`, i), "", rs[0].clock.Now())
		var wg sync.WaitGroup
		outs := make([]*kernel.Outcome, 2)
		errs := make([]error, 2)
		for j := range rs {
			wg.Add(1)
			go func(j int) {
				defer wg.Done()
				c := *call
				outs[j], errs[j] = rs[j].k.Submit(context.Background(), &c)
			}(j)
		}
		wg.Wait()
		for j := range rs {
			if errs[j] != nil {
				t.Fatalf("call %d on replica %d: %v", i, j, errs[j])
			}
		}
		if outs[0].ReceiptID != outs[1].ReceiptID {
			t.Fatalf("call %d decided twice: %s and %s", i, outs[0].ReceiptID, outs[1].ReceiptID)
		}
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	for id, n := range disp.calls {
		if n != 1 {
			t.Fatalf("%s dispatched %d times", id, n)
		}
	}
}
