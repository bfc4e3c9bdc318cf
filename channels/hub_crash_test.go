package channels_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// An announcement is not told until a channel has finished with it. The
// hub's queue lives in memory: when chiod is killed (kill -9, OOM, power)
// between handing a request's announcement to the hub and the channel
// delivering it, nothing may have marked the request told, or the next
// start would never announce it and its deadline would act (deny, escalate,
// or with auto_approve_advisory run the call) with no human told.

// heard records the approval ids a channel delivered announcements of.
type heard struct {
	mu  sync.Mutex
	ids []string
}

func (h *heard) channel() *fake {
	return &fake{name: "webhook", deliver: func(_ context.Context, _ int, req *approval.Request) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.ids = append(h.ids, req.ApprovalID)
		return nil
	}}
}

func (h *heard) has(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.ids, id)
}

// restart opens a new kernel on w's store, as chiod does at start, with a
// hub whose channel records what it delivers, and recovers.
func restart(t *testing.T, w *testkit.World, ch channels.Channel) *kernel.Kernel {
	t.Helper()
	hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{ch}, Backoff: tiny})
	t.Cleanup(hub.Close)
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: w.Store, Dispatcher: nopDispatcher{}, Notifier: hub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return k
}

// parkWith parks one call in a world whose notifier is hub.
func parkWith(t *testing.T, hub *channels.Hub) (*testkit.World, string) {
	t.Helper()
	alice := keys.FromSeed([]byte("alice-alice-alice-alice-alice-32"))
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(slowWebhookPolicy, alice.Public()),
		Notifier: hub, Dispatcher: nopDispatcher{}, Server: "pay", Grants: []string{"deploys"}})
	out := w.SubmitCall(t, w.Call(t, "deploy", `{"v":1}`, ""))
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("call: %+v", out)
	}
	return w, out.ApprovalRequestID
}

func TestAnnouncementCutOffByACrashIsMadeAtTheNextStart(t *testing.T) {
	// The channel is still delivering when chiod dies: the hub is never
	// closed (a killed process runs no shutdown), the kernel just stops.
	hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{slowWebhook(t)}, Backoff: tiny})
	t.Cleanup(hub.Close)
	w, id := parkWith(t, hub)
	w.Kernel.Close()

	var after heard
	restart(t, w, after.channel())
	waitFor(t, "the next start to announce the request", func() bool {
		req, err := w.Kernel.Approval(id)
		return after.has(id) || (err == nil && req.Notified > req.Tier)
	})
	if !after.has(id) {
		req, _ := w.Kernel.Approval(id)
		t.Fatalf("chiod died while its only channel was still delivering request %s, and the next start never announced it: "+
			"the request is marked told (notified %d at tier %d) though no channel ever delivered it", id, req.Notified, req.Tier)
	}
}

func TestAnnouncementRaisedAfterTheHubClosedIsMadeAtTheNextStart(t *testing.T) {
	// chiod is shutting down: its hub has closed, and a call parks.
	hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{slowWebhook(t)}, Backoff: tiny})
	hub.Close()
	w, id := parkWith(t, hub)
	w.Kernel.Close()

	var after heard
	restart(t, w, after.channel())
	waitFor(t, "the next start to announce the request", func() bool { return after.has(id) || told(w, id) })
	if !after.has(id) {
		t.Fatalf("request %s was parked after the hub closed, so no channel ever had it, yet the next start did not announce it", id)
	}
}

func TestAnnouncementTheNextStartMakesIsMadeAgainIfItDiesToo(t *testing.T) {
	hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{slowWebhook(t)}, Backoff: tiny})
	t.Cleanup(hub.Close)
	w, id := parkWith(t, hub)
	w.Kernel.Close()
	// The next start announces it; its channel is still delivering when
	// it dies too.
	restart(t, w, slowWebhook(t)).Close()

	var third heard
	restart(t, w, third.channel())
	waitFor(t, "the third start to announce the request", func() bool { return third.has(id) || told(w, id) })
	if !third.has(id) {
		t.Fatalf("request %s was never delivered by any channel (two runs died while delivering it), yet the third start did not announce it", id)
	}
}

// told reports whether id's current tier is marked told in w's store.
func told(w *testkit.World, id string) bool {
	req, err := w.Kernel.Approval(id)
	return err == nil && req.Notified > req.Tier
}

// NotifyThen's told: once, after every channel finished (delivered or
// given up), at once with nothing to deliver, never for a job cut off.
func TestHubNotifyThenToldOnlyWhenEveryChannelFinished(t *testing.T) {
	release := make(chan struct{})
	slow := &fake{name: "email", deliver: func(ctx context.Context, _ int, _ *approval.Request) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	failing := &fake{name: "webhook", deliver: func(context.Context, int, *approval.Request) error {
		return fmt.Errorf("refused: %w", channels.ErrPermanent)
	}}
	rec := newRecorder()
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{slow, failing, &fake{name: "slack"}}})
	var told atomic.Int32
	h.NotifyThen("approval.requested", req("apr_1", "slack", "webhook", "email"), func(ok bool) {
		if ok {
			told.Add(1)
		}
	})
	rec.waitMetric(t, "slack/ok", 1)
	rec.waitMetric(t, "webhook/failed", 1)
	if n := told.Load(); n != 0 {
		t.Fatalf("told %d time(s) while the email channel was still delivering", n)
	}
	close(release)
	waitFor(t, "told after the last channel finished", func() bool { return told.Load() == 1 })

	var none atomic.Int32
	h.NotifyThen("approval.requested", req("apr_2", "dashboard"), func(ok bool) {
		if ok {
			none.Add(1)
		}
	})
	if none.Load() != 1 {
		t.Fatal("a request with no push channel was not told at once")
	}

	// Cut off by Close: never told.
	stuck := &fake{name: "webhook", deliver: func(ctx context.Context, _ int, _ *approval.Request) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	h2 := newHub(t, newRecorder(), channels.HubOptions{Channels: []channels.Channel{stuck, &fake{name: "slack"}}})
	var cut atomic.Int32
	h2.NotifyThen("approval.requested", req("apr_3", "slack", "webhook"), func(bool) { cut.Add(1) })
	waitFor(t, "the stuck delivery to start", func() bool { return stuck.calls.Load() > 0 })
	h2.Close()
	h2.NotifyThen("approval.requested", req("apr_4", "slack"), func(bool) { cut.Add(1) })
	if n := cut.Load(); n != 0 {
		t.Fatalf("told %d time(s) for notifications the hub's Close cut off", n)
	}
}

// A notification the queue refuses outright (the agent's share of it, or
// the whole of it, taken: an agent flooding its own parked calls while a
// channel is slow) was counted as told: the request's deadline then acted
// with nobody pushed, and under auto_approve_advisory ran the call — an
// agent could silence its approvers by flooding. It is not told.
func TestHubNotifyThenRefusedByAFullQueueIsNotTold(t *testing.T) {
	started, release := make(chan struct{}, 100), make(chan struct{})
	stuck := &fake{name: "x", deliver: func(context.Context, int, *approval.Request) error {
		started <- struct{}{}
		<-release
		return nil
	}}
	rec := newRecorder()
	h := newHub(t, rec, channels.HubOptions{Channels: []channels.Channel{stuck}, QueueSize: 2, Workers: 1})
	t.Cleanup(func() { close(release) })
	var told, refused atomic.Int32
	h.NotifyThen("approval.requested", req("apr_0", "x"), func(bool) {})
	<-started // the worker is stuck on apr_0
	h.NotifyThen("approval.requested", req("apr_1", "x"), func(bool) {})
	h.NotifyThen("approval.requested", req("apr_2", "x"), func(bool) {})
	h.NotifyThen("approval.requested", req("apr_3", "x"), func(ok bool) { // refused: the queue holds 2
		if ok {
			told.Add(1)
		} else {
			refused.Add(1)
		}
	})
	rec.waitFailures(t, 1)
	if told.Load() != 0 {
		t.Fatal("a notification the full queue refused was counted as told: its request's deadline acts with nobody pushed")
	}
	if refused.Load() != 1 {
		t.Fatal("a notification the full queue refused was never reported done (refused)")
	}
}
