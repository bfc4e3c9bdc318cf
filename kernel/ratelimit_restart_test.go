package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

const rateRestartPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
[grants.constraints]
max_calls_per_minute = 3

[[grants]]
id = "files"
server = "demo"
tool = "delete_file"
[grants.constraints]
max_calls_per_minute = 3
forbidden_paths = ["/etc/**"]

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
max_calls_per_minute = 3
require_approval_always = true
[grants.approval]
timeout_seconds = 3600
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`

// rateWorld is a kernel on a real bbolt file, with a builtin dispatcher
// that runs nothing.
func rateWorld(t *testing.T, fake *clock.Fake) *testkit.World {
	t.Helper()
	return testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(rateRestartPolicy, financeLead.Public()),
		Clock: fake, Dispatcher: &fakeDispatcher{}, Grants: []string{"echo", "files", "refunds"}})
}

// restartChiod does what a chiod restart does: the kernel and the store
// are closed (the kernel's memory is gone), the same bbolt file is opened
// again, and a new kernel starts on it and recovers.
func restartChiod(t *testing.T, w *testkit.World) {
	t.Helper()
	restartChiodWith(t, w, w.Policy)
}

// restartChiodWith restarts chiod with policy p.
func restartChiodWith(t *testing.T, w *testkit.World, p *policy.Policy) {
	t.Helper()
	w.Policy = p
	w.Kernel.Close()
	if err := w.Store.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(w.StorePath, w.KernelKey, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Store = st // the world's cleanup closes it
	k, err := kernel.New(kernel.Config{Key: w.KernelKey, Policy: w.Policy, Store: st, Dispatcher: w.Dispatcher, Clock: w.Clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	w.Kernel = k
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// max_calls_per_minute with bbolt was counted in memory only: an agent
// that made its calls of the minute got as many again right after a
// restart (a crash loop, a deploy, an OOM kill).
func TestRateLimitHoldsAcrossARestart(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_800_000_000, 0))
	w := rateWorld(t, fake)
	for i := 1; i <= 3; i++ {
		if out := w.Submit(t, "echo", fmt.Sprintf(`{"n":%d}`, i), ""); out.Status != kernel.StatusAllowed {
			t.Fatalf("call %d of 3 under max_calls_per_minute = 3: %+v", i, out)
		}
	}
	restartChiod(t, w)
	fake.Advance(10 * time.Second)
	if out := w.Submit(t, "echo", `{"n":4}`, ""); out.Status != kernel.StatusDenied || out.Guard != kernel.GuardRateLimit {
		t.Fatalf("max_calls_per_minute = 3: a fourth call within the minute, right after a restart, was %s (%s), want denied by %s",
			out.Status, out.Guard, kernel.GuardRateLimit)
	}
	// The minute passes: the window slides as it would have without the
	// restart (the denied fourth call still counts until 10 s later), but
	// for the millisecond the store keeps a call's moment to: a replayed
	// call counts to the end of its millisecond.
	fake.Advance(50*time.Second + time.Millisecond)
	if out := w.Submit(t, "echo", `{"n":5}`, ""); out.Status != kernel.StatusAllowed {
		t.Fatalf("a call a minute after the first three (one denied call since): %+v", out)
	}
}

// rateStep is one step of a script: let the clock run, then make a call.
type rateStep struct {
	advance    time.Duration
	tool, args string
}

// After a restart the window counts exactly the calls it would have
// counted without one: every call judged under a rate-limited grant,
// whatever its verdict (allowed, parked for a human, denied by another
// guard or by the rate itself), each once, each for one minute. The same
// script runs on a kernel that never restarts and on one that restarts
// before a step; every call must be answered alike.
func TestRateWindowAfterARestartIsTheWindowWithout(t *testing.T) {
	echo := func(d time.Duration) rateStep { return rateStep{d, "echo", `{"x":1}`} }
	etc := func(d time.Duration) rateStep { return rateStep{d, "delete_file", `{"path":"/etc/passwd"}`} }
	tmp := func(d time.Duration) rateStep { return rateStep{d, "delete_file", `{"path":"/tmp/x"}`} }
	refund := func(d time.Duration) rateStep {
		return rateStep{d, "issue_refund", `{"customer_id":"c","amount":5,"currency":"USD"}`}
	}
	script := []rateStep{
		echo(0), refund(0), etc(time.Second), echo(2 * time.Second), tmp(0), refund(5 * time.Second),
		echo(10 * time.Second), etc(0), tmp(3 * time.Second), refund(0), echo(0), refund(0), // over the limits
		echo(20 * time.Second), tmp(15 * time.Second), refund(time.Second), etc(0),
		echo(time.Second), echo(5 * time.Second), tmp(0), refund(0), tmp(30 * time.Second),
		echo(0), etc(10 * time.Second), refund(0), echo(0), echo(61 * time.Second), tmp(0),
	}
	run := func(t *testing.T, restartAt int) []string {
		fake := clock.NewFake(time.Unix(1_800_000_000, 0))
		w := rateWorld(t, fake)
		var got []string
		for i, s := range script {
			if i == restartAt {
				restartChiod(t, w)
			}
			fake.Advance(s.advance)
			out := w.Submit(t, s.tool, s.args, "")
			got = append(got, out.Status+" "+out.Guard)
		}
		return got
	}
	want := run(t, -1)
	for _, at := range []int{3, 7, 12, 16, 22, 25} {
		got := run(t, at)
		for i := range script {
			if got[i] != want[i] {
				t.Errorf("restarted before step %d: step %d (%s %s) was %q, without the restart %q",
					at, i, script[i].tool, script[i].args, got[i], want[i])
			}
		}
	}
}

// An operator restarts chiod with max_calls_per_minute lowered (reining an
// agent in) and reloads the old limit within the minute: as with a reload
// alone (TestRateLimitLoweredThenRestoredStillHoldsForTheMinute), the
// minute's earlier calls must still count. Replayed under the lowered
// limit, the rebuilt window kept only limit+1 of them.
func TestRateLimitRestartedLoweredThenRestoredStillHoldsForTheMinute(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_800_000_000, 0))
	parse := func(limit int) *policy.Policy {
		t.Helper()
		p, err := policy.Parse([]byte(fmt.Sprintf(rateReloadPolicy, limit)), "rate.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w := testkit.NewWorld(t, testkit.Options{Policy: parse(3), Clock: fake, Dispatcher: &fakeDispatcher{}, Grants: []string{"echo"}})
	ran := 0
	submit := func(i int) string {
		t.Helper()
		out := w.Submit(t, "echo", fmt.Sprintf(`{"n":%d}`, i), "")
		if out.Status == kernel.StatusAllowed {
			ran++
		}
		return out.Status
	}
	for i := 1; i <= 3; i++ {
		if s := submit(i); s != kernel.StatusAllowed {
			t.Fatalf("call %d of 3 under max_calls_per_minute = 3: %s", i, s)
		}
	}
	restartChiodWith(t, w, parse(1))
	fake.Advance(5 * time.Second)
	if s := submit(4); s != kernel.StatusDenied {
		t.Fatalf("a fourth call under max_calls_per_minute = 1: %s", s)
	}
	if err := w.Kernel.ApplyPolicy(context.Background(), parse(3)); err != nil {
		t.Fatal(err)
	}
	fake.Advance(5 * time.Second)
	for i := 5; i <= 8; i++ {
		submit(i)
	}
	if ran > 3 {
		t.Fatalf("max_calls_per_minute = 3, lowered to 1 by a restart and restored within one minute, let %d calls run in that minute", ran)
	}
}

// The same with the limit dropped by the restart and restored by a reload
// within the minute: the minute's earlier calls must still count.
func TestRateLimitRestartedWithoutThenRestoredStillHoldsForTheMinute(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_800_000_000, 0))
	parse := func(limit int) *policy.Policy {
		t.Helper()
		p, err := policy.Parse([]byte(fmt.Sprintf(rateReloadPolicy, limit)), "rate.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	w := testkit.NewWorld(t, testkit.Options{Policy: parse(3), Clock: fake, Dispatcher: &fakeDispatcher{}, Grants: []string{"echo"}})
	for i := 1; i <= 3; i++ {
		if out := w.Submit(t, "echo", fmt.Sprintf(`{"n":%d}`, i), ""); out.Status != kernel.StatusAllowed {
			t.Fatalf("call %d of 3 under max_calls_per_minute = 3: %+v", i, out)
		}
	}
	restartChiodWith(t, w, parse(0)) // no limit
	if err := w.Kernel.ApplyPolicy(context.Background(), parse(3)); err != nil {
		t.Fatal(err)
	}
	fake.Advance(10 * time.Second)
	if out := w.Submit(t, "echo", `{"n":4}`, ""); out.Status != kernel.StatusDenied {
		t.Fatalf("max_calls_per_minute = 3, dropped by a restart and restored within one minute: a fourth call in that minute was %s", out.Status)
	}
}

// The store keeps a call's moment to the millisecond; the window kept it
// to the nanosecond. Replayed at the start of its millisecond, a call left
// the rebuilt window up to a millisecond before it would have left the
// window without the restart: a call in that gap passed the limit.
func TestRateWindowAfterARestartKeepsACallItsWholeMinute(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_800_000_000, 500_000)) // 0.5 ms into a millisecond
	w := rateWorld(t, fake)
	for i := 1; i <= 3; i++ {
		if out := w.Submit(t, "echo", fmt.Sprintf(`{"n":%d}`, i), ""); out.Status != kernel.StatusAllowed {
			t.Fatalf("call %d of 3 under max_calls_per_minute = 3: %+v", i, out)
		}
	}
	restartChiod(t, w)
	fake.Advance(time.Minute - 300*time.Microsecond) // the three calls are 0.3 ms short of a minute old
	if out := w.Submit(t, "echo", `{"n":4}`, ""); out.Status != kernel.StatusDenied || out.Guard != kernel.GuardRateLimit {
		t.Fatalf("max_calls_per_minute = 3: a fourth call less than a minute after the first three, after a restart, was %s (%s), want denied by %s",
			out.Status, out.Guard, kernel.GuardRateLimit)
	}
}
