package channels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
)

// stuckChannel blocks every delivery until released; started reports each.
func stuckChannel(t *testing.T, name string) (f *fake, started chan string, release func()) {
	started, ch := make(chan string, 64), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	f = &fake{name: name, deliver: func(ctx context.Context, _ int, r *approval.Request) error {
		select {
		case started <- r.ApprovalID:
		default:
		}
		select { // the hub's Close cancels ctx, whichever cleanup runs first
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	return f, started, release
}

func agentReq(id, subject string, argBytes int, chans ...string) *approval.Request {
	r := req(id, chans...)
	r.SubjectID = subject
	if argBytes > 0 {
		r.Arguments = json.RawMessage(`"` + strings.Repeat("a", argBytes-2) + `"`)
	}
	return r
}

// At the default queue size, one agent's flood beyond its share drops only
// its own notifications, each recorded as the agent's share being taken.
func TestHubAgentOverItsShareDropsOnlyItsOwnNotifications(t *testing.T) {
	rec := newRecorder()
	f, started, release := stuckChannel(t, "x")
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}, Workers: 1})
	h.Notify("approval.requested", agentReq("apr_first", "mallory", 0, "x"))
	<-started
	const flood = channels.DefaultQueueSize + 2
	for i := range flood {
		h.Notify("approval.requested", agentReq(fmt.Sprintf("apr_m%d", i), "mallory", 0, "x"))
	}
	h.Notify("approval.requested", agentReq("apr_honest", "honest", 0, "x"))
	share := channels.DefaultQueueSize / 8
	if m, _ := rec.snapshot(); m["x/failed"] != flood-share {
		t.Fatalf("metrics %v, want x/failed = %d (the flood beyond its share of %d)", m, flood-share, share)
	}
	rec.waitFailures(t, 1)
	release()
	rec.waitMetric(t, "x/ok", 1+share+1) // the honest request was queued and delivered
	// Drops beyond the reporter's buffer are only counted, so fewer may be
	// recorded; each recorded one is the flooding agent's, as its share.
	h.Close()
	for _, f := range rec.waitFailures(t, 1) {
		if !strings.HasPrefix(f, "apr_m") || !strings.Contains(f, "queue full for this agent") {
			t.Fatalf("failure %q: only the flooding agent's notifications may drop, as its share", f)
		}
	}
	if m, _ := rec.snapshot(); m["x/ok"] != 1+share+1 || m["x/failed"] != flood-share {
		t.Fatalf("metrics %v", m)
	}
}

// Agents are served in turn, each agent's notifications in the order they
// were queued: a long backlog of one delays another by one job at most.
func TestHubServesAgentsInTurnEachInOrder(t *testing.T) {
	rec := newRecorder()
	var mu sync.Mutex
	var order []string
	f, started, release := stuckChannel(t, "x")
	inner := f.deliver
	f.deliver = func(ctx context.Context, n int, r *approval.Request) error {
		err := inner(ctx, n, r)
		mu.Lock()
		order = append(order, r.ApprovalID)
		mu.Unlock()
		return err
	}
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}, Workers: 1})
	h.Notify("approval.requested", agentReq("a0", "alice", 0, "x"))
	<-started
	for _, n := range []struct{ id, subject string }{
		{"a1", "alice"}, {"a2", "alice"}, {"a3", "alice"}, {"b1", "bob"}, {"a4", "alice"}, {"c1", "carol"}, {"b2", "bob"},
	} {
		h.Notify("approval.requested", agentReq(n.id, n.subject, 0, "x"))
	}
	release()
	rec.waitMetric(t, "x/ok", 8)
	mu.Lock()
	defer mu.Unlock()
	if got, want := strings.Join(order, " "), "a0 a1 b1 c1 a2 b2 a3 a4"; got != want {
		t.Fatalf("delivery order %q, want %q", got, want)
	}
}

// The shares do not lift the channel's total: many agents together still
// fill the queue only to QueueSize, and the next drop says the queue is full.
func TestHubQueueTotalHoldsAcrossAgents(t *testing.T) {
	rec := newRecorder()
	f, started, release := stuckChannel(t, "x")
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}, Workers: 1, QueueSize: 64})
	h.Notify("approval.requested", agentReq("apr_0", "s0", 0, "x"))
	<-started
	for s := range 5 { // each agent's share is 16 (the minimum): 4 agents fill 64
		for i := range 16 {
			h.Notify("approval.requested", agentReq(fmt.Sprintf("apr_s%d_%d", s, i), fmt.Sprintf("s%d", s), 0, "x"))
		}
	}
	for _, f := range rec.waitFailures(t, 16) {
		if !strings.HasPrefix(f, "apr_s4_") || !strings.Contains(f, "notification queue full (") {
			t.Fatalf("failure %q, want the fifth agent's, as the channel's queue being full", f)
		}
	}
	release()
	rec.waitMetric(t, "x/ok", 1+64)
	h.Close()
	if m, f := rec.snapshot(); m["x/ok"] != 65 || m["x/failed"] != 16 || len(f) != 16 {
		t.Fatalf("metrics %v, %d failures", m, len(f))
	}
}

// The byte budget: an agent's queued jobs hold at most QueueBytes/8 of
// request bytes (but one job always fits when it has none queued), and all
// agents' jobs at most QueueBytes; a drop for bytes is counted and recorded
// like one for the job count.
func TestHubQueueByteBudget(t *testing.T) {
	rec := newRecorder()
	f, started, release := stuckChannel(t, "x")
	const budget = 1 << 20 // share 128 KiB
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}, Workers: 1, QueueBytes: budget})
	h.Notify("approval.requested", agentReq("apr_0", "s0", 0, "x"))
	<-started
	h.Notify("approval.requested", agentReq("apr_big", "big", 200<<10, "x"))  // over the share: first one fits
	h.Notify("approval.requested", agentReq("apr_big2", "big", 1<<10, "x"))   // the share is taken
	h.Notify("approval.requested", agentReq("apr_a", "small", 64<<10, "x"))   // fits
	h.Notify("approval.requested", agentReq("apr_b", "small", 64<<10, "x"))   // 128 KiB + overheads > 128 KiB
	h.Notify("approval.requested", agentReq("apr_huge", "huge", budget, "x")) // over the channel's total
	for i := range 4 {                                                        // 200 + 64 + 4×200 KiB: the fourth is over 1 MiB
		h.Notify("approval.requested", agentReq(fmt.Sprintf("apr_f%d", i), fmt.Sprintf("f%d", i), 200<<10, "x"))
	}
	want := map[string]string{
		"apr_big2": "queue full for this agent",
		"apr_b":    "queue full for this agent",
		"apr_huge": "notification queue full (",
		"apr_f3":   "notification queue full (",
	}
	failures := rec.waitFailures(t, len(want))
	if m, _ := rec.snapshot(); m["x/failed"] != len(want) {
		t.Fatalf("metrics %v, want x/failed = %d", m, len(want))
	}
	for _, f := range failures {
		id, _, _ := strings.Cut(f, " ")
		if want[id] == "" || !strings.Contains(f, want[id]) {
			t.Fatalf("failure %q, want one of %v", f, want)
		}
	}
	release()
	rec.waitMetric(t, "x/ok", 1+1+1+3)
}

// The heap a slow channel's queue pins for parked requests with large
// exposed arguments stays within the byte budget's share, not ~256 KiB a
// job (2.5 GiB at DefaultQueueSize).
func TestHubQueueDoesNotPinArgumentsBeyondItsBudget(t *testing.T) {
	rec := newRecorder()
	f, started, _ := stuckChannel(t, "x")
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}, Workers: 1})
	h.Notify("approval.requested", agentReq("apr_0", "mallory", 0, "x"))
	<-started
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	const parks, args = 200, 256 << 10
	for i := range parks { // each request built and dropped here: only the hub keeps it
		h.Notify("approval.requested", agentReq(fmt.Sprintf("apr_%d", i), "mallory", args, "x"))
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	pinned := int64(m1.HeapInuse) - int64(m0.HeapInuse)
	// The agent's share (4 MiB) plus slack for the runtime; without the
	// byte bound this is 50 MiB.
	if limit := int64(channels.DefaultQueueBytes/8 + 4<<20); pinned > limit {
		t.Fatalf("the queue pins %d KiB for %d requests of %d KiB arguments, want ≤ %d KiB", pinned>>10, parks, args>>10, limit>>10)
	}
}
