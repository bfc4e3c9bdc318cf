package httpapi

import (
	"testing"
	"time"
)

// SpentChallenges reports how many spent challenges s remembers, and
// LimitSpentChallenges lowers its cap, so tests of the real sign-in route
// (package httpapi_test) can reach the cap without a million sign-ins.
func SpentChallenges(s *Server) int {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	return s.sessions.spent.len()
}

func LimitSpentChallenges(s *Server, max int) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	s.sessions.spent.max = max
}

// Spent challenges are forgotten ChallengeTTL after they expire, soonest
// first whatever order they were spent in, one by one as sign-ins come (no sweep of the
// whole table); at the cap with none expired, sign-in fails closed; a
// spent challenge is refused while remembered, and after that it is
// refused as expired.
func TestSpentChallengesExpireInOrder(t *testing.T) {
	const max = 100
	ss := newSessions()
	ss.spent = newSpentChallenges(max)
	now := time.Unix(1_800_000_000, 0)
	// Challenges issued over 50 s, spent newest first: spend order is not
	// expiry order.
	issued := make([]string, max)
	for i := range issued {
		c, _, err := ss.issue(now.Add(time.Duration(i/2) * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		issued[i] = c
	}
	at := now.Add(50 * time.Second)
	for i := max - 1; i >= 0; i-- {
		if !ss.take(issued[i], at) {
			t.Fatalf("spending challenge %d refused", i)
		}
	}
	if ss.take(issued[0], at) {
		t.Fatal("a spent challenge was taken twice")
	}
	fresh, _, _ := ss.issue(at)
	if ss.take(fresh, at) {
		t.Fatalf("spent table past its cap of %d", max)
	}
	// Spent challenges are kept ChallengeTTL past their expiry (a clock
	// stepped back must not revive them). 2×ChallengeTTL+9s after the
	// first, those issued in the first 10 s (20 of them) are due: they go,
	// the rest stay, and there is room again.
	at = now.Add(2*ChallengeTTL + 9*time.Second)
	fresh, _, _ = ss.issue(at)
	if !ss.take(fresh, at) {
		t.Fatal("no room once the oldest spent challenges were due to be forgotten")
	}
	if n := ss.spent.len(); n != max-20+1 {
		t.Fatalf("%d spent challenges remembered, want %d", n, max-20+1)
	}
	for i := 20; i < max; i++ {
		if _, ok := ss.spent.set[issued[i]]; !ok {
			t.Fatalf("unexpired spent challenge %d was forgotten", i)
		}
	}
	if ss.take(issued[0], at) {
		t.Fatal("an expired challenge was taken")
	}
	// Below the cap too, every spend forgets what has expired by then:
	// 20 s later 40 more are gone (60 of the first batch in all).
	at = now.Add(2*ChallengeTTL + 29*time.Second)
	late, _, _ := ss.issue(at)
	if !ss.take(late, at) {
		t.Fatal("sign-in refused")
	}
	if n := ss.spent.len(); n != max-60+2 {
		t.Fatalf("%d spent challenges remembered, want %d: expired ones linger", n, max-60+2)
	}
	if ss.spent.queue.Len() != ss.spent.len() {
		t.Fatalf("queue holds %d, set %d", ss.spent.queue.Len(), ss.spent.len())
	}
}

// A clock stepped back within ChallengeTTL cannot replay a spent
// challenge: it is remembered until ChallengeTTL past its expiry, so by
// the time it is forgotten the clock must go back more than ChallengeTTL
// to make it unexpired again.
func TestSpentChallengeNotReplayedAfterClockStepsBack(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	for _, past := range []time.Duration{time.Second, 30 * time.Second, ChallengeTTL - time.Second} {
		ss := newSessions()
		c, exp, err := ss.issue(t0)
		if err != nil {
			t.Fatal(err)
		}
		if !ss.take(c, t0.Add(5*time.Second)) {
			t.Fatal("first sign-in refused")
		}
		// The clock runs on to past after expiry, where another sign-in
		// forgets whatever is due...
		last := exp.Add(past)
		other, _, _ := ss.issue(last)
		if !ss.take(other, last) {
			t.Fatal("second sign-in refused")
		}
		// ...then steps back by up to ChallengeTTL, to before c's expiry:
		// c must still be spent.
		at := last.Add(-ChallengeTTL)
		if ss.take(c, at) {
			t.Fatalf("clock reached expiry+%v, then stepped back %v: the spent challenge was taken again", past, ChallengeTTL)
		}
	}
}
