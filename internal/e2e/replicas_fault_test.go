package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// TestReplicasKill9UnderLoad is issue 13's fault test: three replicas on one
// database under mixed load (allows, denies, at_most_once calls, parks,
// approvals presented to another replica than the one that parked the
// call, deadlines that deny and auto-approve), against a deduplicating
// counting tool server. One replica is killed with SIGKILL mid-load; while
// it is down its deadlines fire on the others and its calls in flight are
// taken over; then it restarts. Afterwards: a call parked on A and approved
// through B ran once, no effect lacks a durable allow decision, nothing ran
// twice, no acknowledged receipt or parked approval is lost, every call is
// settled, and `chio receipt verify --all` is clean through every replica.
func TestReplicasKill9UnderLoad(t *testing.T) {
	srv := startPostgres(t)
	tool := newCountingTool(t, "once")
	approver, _ := keys.Generate(nil)
	c := startCluster(t, srv, fmt.Sprintf(crashPolicy, tool.url, approver.Public()), 3)
	a := newAgent(t, c.node(0), "pay", "once", "asked", "timed", "advisory")
	l := newCrashLedger()

	// Parked on A, approved through B, executed once.
	out := park(t, c.node(0), a, "a-to-b", "approve_me")
	l.ack("approve_me", out)
	approve(context.Background(), c.node(1), out.ApprovalRequestID, approver, l)
	var st kernel.Outcome
	if c.node(2).do(t, "GET", "/v1/calls/a-to-b?wait=10s", nil, &st); st.Status != kernel.StatusAllowed {
		t.Fatalf("parked on A, approved through B: %q", st.Status)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var seq atomic.Int64
	var wg sync.WaitGroup
	var sent [3]atomic.Int64
	for w := 0; w < 9; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			replicaWorker(ctx, t, c, a, approver, l, &seq, &sent, w)
		}(w)
	}
	time.Sleep(1500 * time.Millisecond)
	// The victim's own parked deadlines (1 s) and calls in flight must be
	// finished by the others while it is down.
	victim := c.node(0)
	victim.kill9()
	killedAt := time.Now()
	l.mu.Lock()
	var orphans []string
	for id, tool := range l.requests {
		if tool == "deadline_deny" || tool == "deadline_auto" {
			orphans = append(orphans, id)
		}
	}
	l.mu.Unlock()
	time.Sleep(1500 * time.Millisecond) // load continues on the survivors
	cancel()
	wg.Wait()
	waitFor(t, "the dead replica's deadlines to fire on the others", func() bool {
		for _, id := range orphans {
			var st kernel.Outcome
			if c.node(1).do(t, "GET", "/v1/calls/"+id, nil, &st) != 200 || st.Status == kernel.StatusPendingApproval {
				return false
			}
		}
		return true
	})
	t.Logf("%d deadlines (some armed by the killed replica) fired within %s of the kill, before it restarted",
		len(orphans), time.Since(killedAt).Round(100*time.Millisecond))
	c.restart(0)

	settle(t, c.node(1), l)
	// Calls the victim had decided that nobody was told about (cut off by
	// the kill) are taken over once its lease lapses: wait for every call
	// with an allow receipt to settle.
	waitFor(t, "every allowed call to settle", func() bool { return allSettled(t, c.node(2)) })
	for i := 0; i < 3; i++ {
		if strings.Contains(c.node(i).log(), "took over calls in flight") {
			t.Logf("replica %d took over calls in flight of the killed replica", i)
		}
	}
	for i := 0; i < 3; i++ {
		checkCrashInvariants(t, c.node(i), tool, l)
	}
	_, effects := tool.snapshot()
	if effects["a-to-b"] != 1 {
		t.Fatalf("a-to-b executed %d times", effects["a-to-b"])
	}
	t.Logf("calls sent per replica %d/%d/%d; %d receipts and %d parked approvals acknowledged, %d approvals presented",
		sent[0].Load(), sent[1].Load(), sent[2].Load(), len(l.receipts), len(l.parked), l.approvals.Load())
}

// allSettled reports whether every call with an allow receipt has left
// dispatching.
func allSettled(t *testing.T, d *daemon) bool {
	cursor := ""
	for {
		var page struct {
			Receipts   []map[string]any `json:"receipts"`
			NextCursor string           `json:"next_cursor"`
		}
		if d.do(t, "GET", "/v1/receipts?decision=allow&limit=1000&cursor="+cursor, nil, &page) != 200 {
			return false
		}
		for _, r := range page.Receipts {
			var st kernel.Outcome
			if d.do(t, "GET", "/v1/calls/"+fmt.Sprint(r["request_id"]), nil, &st) != 200 || st.Status == kernel.StatusDispatching {
				return false
			}
		}
		if page.NextCursor == "" {
			return true
		}
		cursor = page.NextCursor
	}
}

// replicaWorker sends a mix of calls round-robin over the replicas until
// ctx ends; an approval is presented to the replica after the one that
// parked the call.
func replicaWorker(ctx context.Context, t *testing.T, c *cluster, a *agent, approver keys.PrivateKey, l *crashLedger, seq *atomic.Int64, sent *[3]atomic.Int64, w int) {
	client := &http.Client{Timeout: 5 * time.Second}
	for i := w; ctx.Err() == nil; i++ {
		n := i % 3
		d := c.node(n)
		id := fmt.Sprintf("rep-%d-%d", w, seq.Add(1))
		var tool, args string
		switch r := rand.IntN(100); {
		case r < 45:
			tool, args = "pay", fmt.Sprintf(`{"amount":%d}`, rand.IntN(1000))
		case r < 60:
			tool, args = "once", `{"note":"at most once"}`
		case r < 70:
			tool, args = "pay", `{"path":"/etc/shadow"}`
		case r < 85:
			tool, args = "approve_me", `{"x":1}`
		case r < 93:
			tool, args = "deadline_deny", `{"x":1}`
		default:
			tool, args = "deadline_auto", `{"x":1}`
		}
		sent[n].Add(1)
		code, out, err := postCall(ctx, client, d.url, a.call(t, id, "tools", tool, args, ""))
		if err != nil || (code != 200 && code != 202 && code != 403) || out.Status == "" {
			continue // cut off by the kill, or 503: not acknowledged
		}
		l.ack(tool, out)
		if tool == "approve_me" && out.ApprovalRequestID != "" && rand.IntN(2) == 0 {
			approve(ctx, c.node(n+1), out.ApprovalRequestID, approver, l)
		}
	}
}
