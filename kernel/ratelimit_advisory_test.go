package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// A call over max_calls_per_minute that the grant routes to a human is a
// routed deny like a forbidden path: only a person lifts it. The rate
// guard ran again on resume with no count (Request.RecentCalls 0), so at
// the deadline the kernel's advisory vote ran every call an agent had
// parked over the limit: a burst of calls, all at one moment, with nobody
// asked.
func TestAutoApproveNeverLiftsARoutedRateLimit(t *testing.T) {
	f := deadlineFixture(t, `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "echo"
server = "demo"
tool = "echo"
[grants.constraints]
max_calls_per_minute = 1
on_trigger = { max_calls_per_minute = "require_approval" }
[grants.approval]
timeout_seconds = 600
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
`, "echo")
	ctx := context.Background()
	first, err := f.k.Submit(ctx, f.call(t, "echo", `{"n":0}`, ""))
	if err != nil || first.Status != kernel.StatusAllowed {
		t.Fatalf("the minute's first call: %+v %v", first, err)
	}
	var parked []*kernel.Outcome
	for i := 1; i <= 4; i++ {
		out, err := f.k.Submit(ctx, f.call(t, "echo", fmt.Sprintf(`{"n":%d}`, i), ""))
		if err != nil || out.Status != kernel.StatusPendingApproval {
			t.Fatalf("call %d over the limit: %+v %v", i, out, err)
		}
		parked = append(parked, out)
	}
	f.clock.Advance(600 * time.Second)
	for _, out := range parked {
		eventually(t, "deadline handled", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Status != approval.StatusPending })
		eventually(t, "call ended", func() bool {
			rec, _ := f.k.Call(out.RequestID)
			return rec != nil && rec.Status != kernel.StatusPendingApproval && rec.Status != kernel.StatusDispatching
		})
	}
	f.k.WaitSettles()
	ran := 0
	for _, out := range parked {
		rec, _ := f.k.Call(out.RequestID)
		if f.disp.count(out.RequestID) != 0 || rec.Status == kernel.StatusAllowed {
			ran++
		}
	}
	if ran != 0 {
		t.Fatalf("no human answered calls over max_calls_per_minute = 1 routed to a human, yet at the deadline the kernel's advisory vote ran %d of %d of them at once",
			ran, len(parked))
	}
}
