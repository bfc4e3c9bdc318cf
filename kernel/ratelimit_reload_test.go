package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

const rateReloadPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "echo"
server = "demo"
tool = "echo"
[grants.constraints]
max_calls_per_minute = %d
`

// A reload that lowers max_calls_per_minute for a moment (an operator
// reining an agent in during an incident) and then restores it must not
// give the agent a fresh allowance within the minute. The in-memory
// window kept only limit+1 calls, by the limit in force at each call: the
// lowered limit threw away the minute's earlier calls, and once restored
// the agent ran more than the limit in one minute.
func TestRateLimitLoweredThenRestoredStillHoldsForTheMinute(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	apply := func(limit int) {
		t.Helper()
		p, err := policy.Parse([]byte(fmt.Sprintf(rateReloadPolicy, limit)), "rate.toml")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.k.ApplyPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	apply(3)
	var err error
	if f.capRaw, f.cap, err = f.k.IssueCapability(f.agent.Public(), []string{"echo"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	ran := 0
	submit := func(i int) string {
		t.Helper()
		out, err := f.k.Submit(ctx, f.call(t, "echo", fmt.Sprintf(`{"n":%d}`, i), ""))
		if err != nil {
			t.Fatal(err)
		}
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
	apply(1)
	if s := submit(4); s != kernel.StatusDenied {
		t.Fatalf("a fourth call under max_calls_per_minute = 1: %s", s)
	}
	apply(3) // the same minute: the clock has not moved
	for i := 5; i <= 8; i++ {
		submit(i)
	}
	if ran > 3 {
		t.Fatalf("max_calls_per_minute = 3, lowered to 1 and restored within one minute, let %d calls run in that minute", ran)
	}
}
