package channels_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// Regression tests, through the kernel, for two ways one agent parking many
// calls on a slow channel hurt everyone: taking every slot of the channel's
// queue (another agent's request was then never announced), and pinning
// its exposed arguments in chiod's heap for every queued job.

const slowWebhookPolicy = `
# The flood below parks more than the default per-agent cap on waiting
# requests: this test is about the channels' queue under such a flood.
[kernel]
max_pending_approvals_per_agent = 10000

[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "deploy"

[channels.webhook]
url = "http://127.0.0.1:9/hook"

[[grants]]
id = "deploys"
server = "pay"
tool = "deploy"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 3600
channels = ["webhook"]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Alice"
`

// slowWebhook is a receiver that answers nothing until released (or Slack
// at its ~1 message/s rate limit): every job behind the workers waits.
func slowWebhook(t *testing.T) *fake {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return &fake{name: "webhook", deliver: func(ctx context.Context, _ int, _ *approval.Request) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	}}
}

type nopDispatcher struct{}

func (nopDispatcher) Dispatch(context.Context, kernel.DispatchRequest) (kernel.DispatchResult, error) {
	return kernel.DispatchResult{}, nil
}

// One agent parks more calls than the channel's queue holds; another
// agent's request must still be queued for its approvers: the flood drops
// only the flooding agent's own notifications. (The queue is shrunk so the
// test stays fast; TestHubAgentOverItsShareDropsOnlyItsOwnNotifications
// floods one at the default size.)
func TestOneAgentsFloodDoesNotSilenceAnotherAgentsRequest(t *testing.T) {
	alice := keys.FromSeed([]byte("alice-alice-alice-alice-alice-32"))
	var mu sync.Mutex
	dropped := map[string]string{}
	const queueSize = 256
	hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{slowWebhook(t)}, Backoff: tiny,
		QueueSize: queueSize, OnFailure: func(id, ch, msg string) { mu.Lock(); dropped[id] = msg; mu.Unlock() }})
	t.Cleanup(hub.Close)
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(slowWebhookPolicy, alice.Public()),
		Notifier: hub, Dispatcher: nopDispatcher{}})
	mallory, _ := keys.Generate(nil)
	honest, _ := keys.Generate(nil)
	capM, _, err := w.Kernel.IssueCapability(mallory.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	capH, _, err := w.Kernel.IssueCapability(honest.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// The flooding agent: more parks than the queue and the workers hold.
	const flood = queueSize + channels.DefaultWorkers
	var next, parked atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= flood {
				c := w.CallAs(t, mallory, capM, "pay", "deploy", `{"v":1}`, "")
				if out, err := w.Kernel.Submit(context.Background(), c); err == nil && out.Status == kernel.StatusPendingApproval {
					parked.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if parked.Load() != flood {
		t.Fatalf("flooding agent parked %d of %d", parked.Load(), flood)
	}

	out := w.SubmitCall(t, w.CallAs(t, honest, capH, "pay", "deploy", `{"v":2}`, ""))
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("honest call: %+v", out)
	}
	// Drops are recorded asynchronously: wait until the flood's are in.
	waitFor(t, "the flooding agent's drops", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(dropped) > 0
	})
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if msg, lost := dropped[out.ApprovalRequestID]; lost {
		t.Fatalf("the honest agent's request was not announced (%q): another agent's flood took the channel's queue", msg)
	}
	for id, msg := range dropped {
		if !strings.Contains(msg, "notification queue full for this agent") {
			t.Fatalf("flood drop %s: %q, want the agent's share named", id, msg)
		}
	}
}

// Queued jobs hold their request, exposed arguments (up to
// kernel.MaxArgumentsBytes) included: the queue is bounded in bytes as
// well as jobs, so parks with large arguments on a slow channel pin at
// most the agent's share of the byte budget (DefaultQueueBytes/8), not
// ~256 KiB per park (2.5 GiB at DefaultQueueSize). 48 parks pin ~12 MiB
// without the bound, ~5 MiB with it.
func TestChannelQueueDoesNotPinExposedArgumentsBeyondItsByteBudget(t *testing.T) {
	alice := keys.FromSeed([]byte("alice-alice-alice-alice-alice-32"))
	hub := channels.NewHub(channels.HubOptions{Channels: []channels.Channel{slowWebhook(t)}, Backoff: tiny})
	t.Cleanup(hub.Close)
	pol := strings.Replace(fmt.Sprintf(slowWebhookPolicy, alice.Public()), `channels = ["webhook"]`, "channels = [\"webhook\"]\nexpose_arguments = true", 1)
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: pol, Notifier: hub, Dispatcher: nopDispatcher{},
		Server: "pay", Grants: []string{"deploys"},
		// Each park's guards read ~256 KiB of arguments: on a loaded
		// machine they can pass the 50 ms guard budget, which is not what
		// this test is about.
		GuardStopwatch: func() time.Duration { return 0 }})
	blob := strings.Repeat("b", kernel.MaxArgumentsBytes-64)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	const parks = 48
	for i := range parks {
		out := w.Submit(t, "deploy", fmt.Sprintf(`{"i":%d,"blob":%q}`, i, blob), "")
		if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("park %d: %+v", i, out)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	pinned := int64(m1.HeapInuse) - int64(m0.HeapInuse)
	t.Logf("%d parks with %d KiB exposed arguments, webhook slow: heap in use +%d KiB", parks, kernel.MaxArgumentsBytes>>10, pinned>>10)
	if pinned > 9<<20 {
		t.Fatalf("the notification queue pins %d MiB for %d parked requests: it must be bounded in bytes, "+
			"each job holding the request's exposed arguments", pinned>>20, parks)
	}
}
