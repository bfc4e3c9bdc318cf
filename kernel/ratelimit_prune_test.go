package kernel

import (
	"fmt"
	"testing"
	"time"
)

// Past 65,536 keys the window drops idle ones, scanning every key. When
// all of them are live (calls of the last minute: many agents, or a start
// that replays a busy minute, ratelimit_rebuild.go), the scan found nothing
// to drop and ran again on the very next call: every call paid a full
// scan, and a restart replaying 100k agents' minute took ~56 s. A scan
// must be paid for by the keys added since the last one (amortized: at
// most about log2(keys) scans for this many new keys).
func TestRateWindowDoesNotRescanLiveKeysOnEveryCall(t *testing.T) {
	w := newRateWindow()
	now := time.Unix(1_700_000_000, 0)
	const keys = 200_000
	for i := range keys {
		w.hit(fmt.Sprintf("grant\x00agent-%d", i), now, 30)
	}
	if len(w.hits) != keys {
		t.Fatalf("%d keys kept, want %d (all are live)", len(w.hits), keys)
	}
	if w.scans > 4 {
		t.Fatalf("%d full scans for %d live keys: the window rescans on every call past its bound", w.scans, keys)
	}
	// A minute later they are all idle: the next scan drops them.
	later := now.Add(2 * time.Minute)
	for i := range keys {
		w.hit(fmt.Sprintf("grant\x00fresh-%d", i), later, 30)
	}
	if len(w.hits) >= 2*keys {
		t.Fatalf("%d keys kept: the idle ones were never dropped", len(w.hits))
	}
}
