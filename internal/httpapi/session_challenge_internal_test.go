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

// Spent challenges are forgotten as they expire, soonest first whatever
// order they were spent in, one by one as sign-ins come (no sweep of the
// whole table); at the cap with none expired, sign-in fails closed; a
// spent challenge is refused until it expires, and then it is refused as
// expired.
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
	// ChallengeTTL+9s after the first, the challenges issued in the first
	// 10 s (20 of them) have expired: they go, the rest stay, and there is
	// room again.
	at = now.Add(ChallengeTTL + 9*time.Second)
	if !ss.take(fresh, at) {
		t.Fatal("no room once the oldest spent challenges expired")
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
	at = now.Add(ChallengeTTL + 29*time.Second)
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
