package kernel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
)

// lateArmingClock is the kernel's clock when time passes between the
// kernel working out how far off a deadline is and arming its timer: a
// goroutine preempted there (under test, another goroutine advancing the
// fake clock at that moment, as TestEscalationTiersThenTerminalDeny's
// does once the escalated tier is visible). The first long wake-up the
// kernel arms sees the clock jump by lag just before it is registered.
type lateArmingClock struct {
	*clock.Fake
	lag    time.Duration
	jumped atomic.Bool
}

func (c *lateArmingClock) jump(d time.Duration) {
	if d >= c.lag && c.jumped.CompareAndSwap(false, true) {
		c.Fake.Advance(c.lag)
	}
}

func (c *lateArmingClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.jump(d)
	return c.Fake.AfterFunc(d, f)
}

// AfterFuncAt arms f for the absolute time at, after the same jump.
func (c *lateArmingClock) AfterFuncAt(at time.Time, f func()) clock.Timer {
	c.jump(at.Sub(c.Fake.Now()))
	return c.Fake.AfterFunc(at.Sub(c.Fake.Now()), f)
}

// A deadline is a point in time (the request's expires_at), so its timer
// must fire when the clock reaches that point however late it was armed:
// a timer armed "600 s from now" after the clock moved on fires that much
// past the deadline, leaving the request pending (and approvable) so long.
func TestDeadlineFiresAtItsTimeWhenArmedLate(t *testing.T) {
	f := lifecycleOn(t, "deny", func(fc *clock.Fake) clock.Clock {
		return &lateArmingClock{Fake: fc, lag: 300 * time.Second}
	})
	out := f.refund(t, 450) // pending for 600 s; 300 of them pass while its timer is armed
	// Its approvers are told first (a deadline never acts on a tier not
	// yet told: it gives the tier its full time from then instead).
	eventually(t, "its approvers told", func() bool {
		r, _ := f.k.Approval(out.ApprovalRequestID)
		return r.Notified > r.Tier
	})
	f.clock.Advance(300 * time.Second) // the deadline
	eventually(t, "the deadline to deny", func() bool {
		r, _ := f.k.Approval(out.ApprovalRequestID)
		return r.Status == approval.StatusExpired
	})
}
