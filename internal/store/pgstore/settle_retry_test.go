package pgstore_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// gateDispatcher answers every call once gate is closed, counting them.
type gateDispatcher struct {
	gate  chan struct{}
	mu    sync.Mutex
	calls map[string]int
}

func (d *gateDispatcher) Dispatch(_ context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	<-d.gate
	d.mu.Lock()
	d.calls[r.RequestID]++
	d.mu.Unlock()
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

// A settle commit that fails on PostgreSQL (a failover, a brief outage) is
// recorded by the replica's own sweep once the database takes commits
// again. The kernel keeps the tool's answer for that, but only bbolt had a
// heal hook, and the sweep took over only other, gone replicas' calls: the
// call stayed "dispatching" for as long as the replica ran (while its agent
// had been told "succeeded"), and after a restart another replica sent it
// to the tool again. Recording the kept answer sends nothing.
func TestFailedSettleIsRecordedBySweepOnceDatabaseHeals(t *testing.T) {
	dsn := pgtest.Database(t)
	disp := &gateDispatcher{gate: make(chan struct{}), calls: map[string]int{}}
	rs := kernelsOn(t, dsn, 2, disp)
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := rs[0].k.IssueCapability(agent.Public(), []string{"echo"}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"x":1}`, "", rs[0].clock.Now())
	type result struct {
		out *kernel.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := rs[0].k.Submit(context.Background(), call)
		done <- result{out, err}
	}()
	stored := func() string {
		var st string
		rs[1].store.View(func(tx kernel.ReadTx) error {
			if c, err := tx.Call(call.RequestID); err == nil {
				st = c.Status
			}
			return nil
		})
		return st
	}
	eventually(t, "the allow decision", func() bool { return stored() == kernel.StatusDispatching })
	// The database refuses the settle commit.
	exec(t, dsn, `CREATE FUNCTION refuse_settle() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.status <> 'dispatching' THEN RAISE EXCEPTION 'injected outage'; END IF; RETURN NEW; END $$`)
	exec(t, dsn, `CREATE TRIGGER refuse_settle BEFORE INSERT OR UPDATE ON chio_calls FOR EACH ROW EXECUTE FUNCTION refuse_settle()`)
	close(disp.gate)
	r := <-done
	if r.err != nil || r.out.Status != kernel.StatusAllowed {
		t.Fatalf("submit: %+v %v", r.out, r.err)
	}
	time.Sleep(1500 * time.Millisecond) // the settle commit, and a sweep's retry, fail
	if st := stored(); st != kernel.StatusDispatching {
		t.Fatalf("the settle commit was refused, yet the call is %q", st)
	}
	exec(t, dsn, `DROP TRIGGER refuse_settle ON chio_calls`)
	// The database is healthy again; the replica's sweep (every second)
	// records the kept answer.
	deadline := time.Now().Add(5 * time.Second)
	for stored() != kernel.StatusAllowed {
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the database healed, the call its agent was told succeeded is still %q", stored())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var rec *kernel.CallRecord
	rs[1].store.View(func(tx kernel.ReadTx) error { rec, _ = tx.Call(call.RequestID); return nil })
	if rec.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("recorded execution %q, want the tool's answer (succeeded)", rec.Execution)
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[call.RequestID]; n != 1 {
		t.Fatalf("the tool saw the call %d times, want once", n)
	}
}
