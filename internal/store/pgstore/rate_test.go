package pgstore_test

import (
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
)

// max_calls_per_minute on a shared store: a replica whose clock lags across
// a second boundary sees the calls another replica has just counted in a
// "later" second (it used to count only seconds before its own now, so
// each replica could spend the limit on its own).
func TestHitRateCountsCallsOfAReplicaWhoseClockIsAhead(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	now := time.Unix(1_800_000_000, 500_000_000)
	for i := 1; i <= 5; i++ { // replica a, clock at now
		if n, err := a.HitRate("g\x00agent", now); err != nil || n != i {
			t.Fatalf("a hit %d: %d %v", i, n, err)
		}
	}
	// replica b, 600 ms behind (across a second boundary): the same key's 6th call.
	n, err := b.HitRate("g\x00agent", now.Add(-600*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Fatalf("replica b counts %d calls in the last minute, want 6: the 5 calls replica a counted 0.6 s 'later' are invisible to it", n)
	}
}

// Seconds ahead of now count only up to a minute: one replica whose clock
// is far ahead (or an NTP step back) must not spend every replica's shared
// max_calls_per_minute for as long as the skew lasts.
func TestHitRateIgnoresCallsStampedFarAhead(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	now := time.Unix(1_800_000_000, 0)
	for i := 1; i <= 5; i++ {
		if _, err := a.HitRate("g\x00agent", now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := b.HitRate("g\x00agent", now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("a call at now counts %d calls in its last minute: the 5 stamped an hour in the future count too", n)
	}
}
