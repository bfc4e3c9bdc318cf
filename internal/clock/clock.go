// Package clock is the one source of time for chio's decision code. Production
// uses Real; tests drive Fake through TTLs, skew boundaries, escalation tiers
// and restarts. Decision code never calls time.Now directly.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and arms wake-ups.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f in its own goroutine once d has elapsed on this clock.
	AfterFunc(d time.Duration, f func()) Timer
	// AfterFuncAt runs f in its own goroutine once this clock reaches at
	// (at once if it has). Deadlines are points in time: arming one as
	// "at - Now()" and then AfterFunc would fire late by however long
	// passed between the two readings.
	AfterFuncAt(at time.Time, f func()) Timer
}

// Timer is a cancellable wake-up.
type Timer interface {
	// Stop prevents the timer from firing; it reports whether it was pending.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// AfterFuncAt wraps time.AfterFunc with the time left until at.
func (Real) AfterFuncAt(at time.Time, f func()) Timer { return time.AfterFunc(time.Until(at), f) }

// Fake is a manually advanced clock for tests. The zero value is not usable;
// construct with NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeTimer
}

// NewFake returns a Fake set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc arms f to run when the fake time reaches now+d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	f.mu.Lock()
	return f.armLocked(f.now.Add(d), fn)
}

// AfterFuncAt arms f to run when the fake time reaches at; the time is
// read and the timer registered under one lock, so an Advance from
// another goroutine lands wholly before or after.
func (f *Fake) AfterFuncAt(at time.Time, fn func()) Timer {
	f.mu.Lock()
	return f.armLocked(at, fn)
}

// armLocked registers a timer for at, or fires it now if at has come;
// f.mu is held and released.
func (f *Fake) armLocked(at time.Time, fn func()) Timer {
	t := &fakeTimer{clock: f, at: at, fn: fn}
	if !at.After(f.now) {
		f.mu.Unlock()
		t.fired = true
		go fn()
		return t
	}
	f.waiters = append(f.waiters, t)
	f.mu.Unlock()
	return t
}

// Advance moves time forward by d and fires every timer now due, in order.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves time to t (never backwards) and fires due timers.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	if t.After(f.now) {
		f.now = t
	}
	var due, keep []*fakeTimer
	for _, w := range f.waiters {
		if !w.at.After(f.now) {
			w.fired = true
			due = append(due, w)
		} else {
			keep = append(keep, w)
		}
	}
	f.waiters = keep
	f.mu.Unlock()
	for _, w := range due {
		go w.fn()
	}
}

// Pending reports how many timers are armed (tests wait on it).
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

type fakeTimer struct {
	clock *Fake
	at    time.Time
	fn    func()
	fired bool
}

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, w := range f.waiters {
		if w == t {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			return true
		}
	}
	return false
}
