package channels_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
)

// tiny keeps retries fast; tests count outcomes, never time them.
var tiny = channels.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}

// recorder is the Metric and OnFailure sink.
type recorder struct {
	mu       sync.Mutex
	metrics  map[string]int // "channel/result" → count
	failures []string       // "approvalID channel: msg"
}

func newRecorder() *recorder { return &recorder{metrics: map[string]int{}} }

func (r *recorder) metric(ch, res string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metrics[ch+"/"+res]++
}

func (r *recorder) onFailure(id, ch, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, id+" "+ch+": "+msg)
}

func (r *recorder) snapshot() (map[string]int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.metrics), append([]string(nil), r.failures...)
}

// waitFor polls cond (generous deadline: a hang fails, slowness does not).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *recorder) waitMetric(t *testing.T, key string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("metric %s = %d", key, n), func() bool {
		m, _ := r.snapshot()
		return m[key] >= n
	})
}

func (r *recorder) waitFailures(t *testing.T, n int) []string {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d failures", n), func() bool {
		_, f := r.snapshot()
		return len(f) >= n
	})
	_, f := r.snapshot()
	return f
}

// fake is a scriptable channel; deliver gets the 1-based call number.
type fake struct {
	name    string
	deliver func(ctx context.Context, call int, req *approval.Request) error
	calls   atomic.Int32
	mu      sync.Mutex
	ids     []string // delivery ids seen
	limit   int      // AttemptLimiter when > 0
}

func (f *fake) Name() string { return f.name }

func (f *fake) Deliver(ctx context.Context, _ string, req *approval.Request) error {
	n := int(f.calls.Add(1))
	f.mu.Lock()
	f.ids = append(f.ids, channels.DeliveryID(ctx))
	f.mu.Unlock()
	if f.deliver == nil {
		return nil
	}
	return f.deliver(ctx, n, req)
}

// limited wraps a fake with its own attempt budget.
type limited struct{ *fake }

func (l limited) MaxAttempts() int { return l.limit }

func newHub(t *testing.T, rec *recorder, opts channels.HubOptions) *channels.Hub {
	t.Helper()
	if opts.Backoff == (channels.Backoff{}) {
		opts.Backoff = tiny
	}
	opts.Metric, opts.OnFailure = rec.metric, rec.onFailure
	h := channels.NewHub(opts)
	t.Cleanup(h.Close)
	return h
}

func req(id string, chans ...string) *approval.Request {
	return &approval.Request{ApprovalID: id, Status: approval.StatusPending, Channels: chans}
}

func TestHubRouting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		channels []string
		want     map[string]int
	}{
		{"one", []string{"slack"}, map[string]int{"slack/ok": 1}},
		{"pull and stream channels need no push", []string{"slack", "dashboard", "poll", "terminal"}, map[string]int{"slack/ok": 1}},
		{"duplicates deliver once", []string{"webhook", "slack", "webhook"}, map[string]int{"slack/ok": 1, "webhook/ok": 1}},
		{"unregistered skipped", []string{"email"}, map[string]int{}},
		{"none", nil, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			wh, sl := &fake{name: "webhook"}, &fake{name: "slack"}
			h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{wh, sl}})
			h.Notify("approval.requested", req("apr_1", tc.channels...))
			for k, n := range tc.want {
				rec.waitMetric(t, k, n)
			}
			h.Close() // anything unexpected still queued would show up as failed
			got, failures := rec.snapshot()
			if !maps.Equal(got, tc.want) || len(failures) != 0 {
				t.Fatalf("metrics %v failures %v, want %v and none", got, failures, tc.want)
			}
		})
	}
}

func TestHubResults(t *testing.T) {
	transient := errors.New("connection refused")
	for _, tc := range []struct {
		name        string
		maxAttempts int // hub
		limit       int // channel's own budget
		deliver     func(ctx context.Context, call int, req *approval.Request) error
		wantCalls   int
		wantMetrics map[string]int
		wantFailure string // substring; "" = no failure
	}{
		{
			name: "ok first time", deliver: nil, wantCalls: 1,
			wantMetrics: map[string]int{"x/ok": 1},
		},
		{
			name: "retry then ok",
			deliver: func(_ context.Context, n int, _ *approval.Request) error {
				if n <= 2 {
					return transient
				}
				return nil
			},
			wantCalls: 3, wantMetrics: map[string]int{"x/retry": 2, "x/ok": 1},
		},
		{
			name: "permanent stops at once",
			deliver: func(context.Context, int, *approval.Request) error {
				return fmt.Errorf("%w: 400 Bad Request", channels.ErrPermanent)
			},
			wantCalls: 1, wantMetrics: map[string]int{"x/failed": 1}, wantFailure: "after 1 attempt(s): permanent delivery failure: 400 Bad Request",
		},
		{
			name: "hub MaxAttempts", maxAttempts: 3,
			deliver:   func(context.Context, int, *approval.Request) error { return transient },
			wantCalls: 3, wantMetrics: map[string]int{"x/retry": 2, "x/failed": 1}, wantFailure: "after 3 attempt(s): connection refused",
		},
		{
			name: "channel AttemptLimiter overrides hub", maxAttempts: 5, limit: 2,
			deliver:   func(context.Context, int, *approval.Request) error { return transient },
			wantCalls: 2, wantMetrics: map[string]int{"x/retry": 1, "x/failed": 1}, wantFailure: "after 2 attempt(s)",
		},
		{
			name:      "default MaxAttempts is 6",
			deliver:   func(context.Context, int, *approval.Request) error { return transient },
			wantCalls: 6, wantMetrics: map[string]int{"x/retry": 5, "x/failed": 1}, wantFailure: "after 6 attempt(s)",
		},
		{
			name: "panicking channel is a failed attempt", maxAttempts: 2,
			deliver:   func(context.Context, int, *approval.Request) error { panic("boom") },
			wantCalls: 2, wantMetrics: map[string]int{"x/retry": 1, "x/failed": 1}, wantFailure: "panicked: boom",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			f := &fake{name: "x", deliver: tc.deliver, limit: tc.limit}
			var ch channels.Channel = f
			if tc.limit > 0 {
				ch = limited{f}
			}
			h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{ch}, MaxAttempts: tc.maxAttempts})
			h.Notify("approval.requested", req("apr_1", "x"))
			for k, n := range tc.wantMetrics {
				if strings.HasSuffix(k, "/ok") || strings.HasSuffix(k, "/failed") {
					rec.waitMetric(t, k, n)
				}
			}
			h.Close()
			got, failures := rec.snapshot()
			if !maps.Equal(got, tc.wantMetrics) {
				t.Errorf("metrics %v, want %v", got, tc.wantMetrics)
			}
			if n := int(f.calls.Load()); n != tc.wantCalls {
				t.Errorf("%d attempts, want %d", n, tc.wantCalls)
			}
			switch {
			case tc.wantFailure == "" && len(failures) != 0:
				t.Errorf("unexpected failures %v", failures)
			case tc.wantFailure != "" && (len(failures) != 1 || !strings.Contains(failures[0], tc.wantFailure) || !strings.HasPrefix(failures[0], "apr_1 x: approval.requested")):
				t.Errorf("failures %v, want one containing %q", failures, tc.wantFailure)
			}
			// Every attempt of the job carried the same, non-empty delivery id.
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, id := range f.ids {
				if id == "" || id != f.ids[0] {
					t.Fatalf("delivery ids %v, want one stable id", f.ids)
				}
			}
		})
	}
}

func TestHubDistinctDeliveryIDsPerJob(t *testing.T) {
	rec := newRecorder()
	f := &fake{name: "x"}
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}})
	h.Notify("approval.requested", req("apr_1", "x"))
	h.Notify("approval.resolved", req("apr_1", "x"))
	rec.waitMetric(t, "x/ok", 2)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ids) != 2 || f.ids[0] == f.ids[1] || f.ids[0] == "" {
		t.Fatalf("delivery ids %v, want two distinct", f.ids)
	}
}

func TestHubPanickingChannelKeepsHubWorking(t *testing.T) {
	rec := newRecorder()
	f := &fake{name: "x", deliver: func(_ context.Context, _ int, r *approval.Request) error {
		if r.ApprovalID == "apr_boom" {
			panic("channel bug")
		}
		return nil
	}}
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}, MaxAttempts: 2, Workers: 1})
	h.Notify("approval.requested", req("apr_boom", "x"))
	h.Notify("approval.requested", req("apr_fine", "x"))
	rec.waitMetric(t, "x/failed", 1)
	rec.waitMetric(t, "x/ok", 1)
	if f := rec.waitFailures(t, 1); !strings.HasPrefix(f[0], "apr_boom x:") || !strings.Contains(f[0], "panicked: channel bug") {
		t.Fatalf("failures %v", f)
	}
}

// TestHubFullQueue: with the only worker stuck, Notify still returns at once
// (the test would hang otherwise), drops are counted and recorded.
func TestHubFullQueue(t *testing.T) {
	rec := newRecorder()
	started, release := make(chan struct{}, 100), make(chan struct{})
	f := &fake{name: "x", deliver: func(context.Context, int, *approval.Request) error {
		started <- struct{}{}
		<-release // ignores ctx on purpose: a truly stuck channel
		return nil
	}}
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}, QueueSize: 2, Workers: 1})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before h.Close even if the test fails early

	h.Notify("approval.requested", req("apr_0", "x"))
	<-started // the worker is now stuck on apr_0
	for i := 1; i <= 10; i++ {
		h.Notify("approval.requested", req(fmt.Sprintf("apr_%d", i), "x"))
	}
	// Two fit the queue, eight are dropped; the metric is counted in Notify.
	if m, _ := rec.snapshot(); m["x/failed"] != 8 {
		t.Fatalf("metrics %v, want x/failed = 8", m)
	}
	failures := rec.waitFailures(t, 8)
	for _, f := range failures {
		if !strings.Contains(f, "queue full") {
			t.Fatalf("failure %q, want queue full", f)
		}
	}
	unblock()
	rec.waitMetric(t, "x/ok", 3)
	h.Close()
	if m, f := rec.snapshot(); m["x/ok"] != 3 || m["x/failed"] != 8 || len(f) != 8 {
		t.Fatalf("metrics %v failures %d", m, len(f))
	}
}

func TestHubCloseAbandonsPendingWork(t *testing.T) {
	rec := newRecorder()
	started := make(chan struct{}, 10)
	f := &fake{name: "x", deliver: func(ctx context.Context, n int, r *approval.Request) error {
		if r.ApprovalID == "apr_retrying" {
			return errors.New("down")
		}
		started <- struct{}{}
		<-ctx.Done() // in flight until Close cancels it
		return ctx.Err()
	}}
	slow := channels.Backoff{Initial: time.Hour, Max: time.Hour}
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{f}, Workers: 2, Backoff: slow})

	h.Notify("approval.requested", req("apr_retrying", "x")) // waits an hour for attempt 2
	rec.waitMetric(t, "x/retry", 1)
	h.Notify("approval.requested", req("apr_inflight", "x")) // second worker, stuck in Deliver
	<-started
	h.Notify("approval.requested", req("apr_queued", "x")) // no free worker: stays queued
	h.Close()

	m, failures := rec.snapshot()
	if m["x/failed"] != 3 || m["x/ok"] != 0 {
		t.Fatalf("metrics %v, want 3 failed", m)
	}
	want := map[string]string{
		"apr_retrying": "abandoned at shutdown after 1 attempt(s): down",
		"apr_inflight": "abandoned at shutdown after 1 attempt(s): context canceled",
		"apr_queued":   "not delivered: hub closed",
	}
	if len(failures) != len(want) {
		t.Fatalf("failures %v", failures)
	}
	for _, f := range failures {
		id, _, _ := strings.Cut(f, " ")
		if !strings.Contains(f, want[id]) {
			t.Errorf("failure %q, want it to contain %q", f, want[id])
		}
	}

	// After Close: no delivery, no panic, counted as failed.
	calls := f.calls.Load()
	h.Notify("approval.resolved", req("apr_late", "x"))
	h.Close() // idempotent
	if m, _ := rec.snapshot(); m["x/failed"] != 4 || f.calls.Load() != calls {
		t.Fatalf("after Close: metrics %v, calls %d→%d", m, calls, f.calls.Load())
	}
}

func TestHubNilRequestAndEmptyHub(t *testing.T) {
	rec := newRecorder()
	h := newHub(t, rec, channels.HubOptions{})
	h.Notify("approval.requested", nil)
	h.Notify("approval.requested", req("apr_1", "webhook", "poll"))
	h.Close()
	if m, f := rec.snapshot(); len(m) != 0 || len(f) != 0 {
		t.Fatalf("metrics %v failures %v", m, f)
	}
}

func TestNewHubRejectsBadChannels(t *testing.T) {
	for name, chs := range map[string][]channels.Channel{
		"nil":       {nil},
		"duplicate": {&fake{name: "x"}, &fake{name: "x"}},
		"unnamed":   {&fake{}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("NewHub accepted a bad channel list")
				}
			}()
			channels.NewHub(channels.HubOptions{Channels: chs}).Close()
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	noJitter := channels.Backoff{Initial: 200 * time.Millisecond, Max: 30 * time.Second, Factor: 2, Jitter: -1}
	for _, tc := range []struct {
		b    channels.Backoff
		n    int
		lo   time.Duration
		hi   time.Duration
		name string
	}{
		{noJitter, 1, 200 * time.Millisecond, 200 * time.Millisecond, "first"},
		{noJitter, 2, 400 * time.Millisecond, 400 * time.Millisecond, "doubles"},
		{noJitter, 5, 3200 * time.Millisecond, 3200 * time.Millisecond, "fifth"},
		{noJitter, 100, 30 * time.Second, 30 * time.Second, "capped"},
		{channels.Backoff{}, 1, 160 * time.Millisecond, 240 * time.Millisecond, "defaults with ±20% jitter"},
		{channels.Backoff{}, 50, 24 * time.Second, 36 * time.Second, "default cap with jitter"},
		{tiny, 10, 0, 2400 * time.Microsecond, "tiny for tests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 100 {
				if d := tc.b.Delay(tc.n); d < tc.lo || d > tc.hi {
					t.Fatalf("Delay(%d) = %v, want in [%v, %v]", tc.n, d, tc.lo, tc.hi)
				}
			}
		})
	}
}
