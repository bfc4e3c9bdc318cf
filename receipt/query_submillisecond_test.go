package receipt

import (
	"testing"
	"time"
)

// Receipts are timestamped in whole milliseconds, and a time bound was
// cut to its millisecond silently: --since 12:00:00.0005 read as
// 12:00:00.000, so a receipt of 12:00:00.000, before the asked window,
// was listed and counted in it. A bound finer than a millisecond is
// refused, never moved.
func TestTimeBoundFinerThanAMillisecondIsRefused(t *testing.T) {
	at := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	r := &Receipt{Timestamp: at.UnixMilli()}
	for _, since := range []string{"2026-01-02T12:00:00.0005Z", "2026-01-02T12:00:00.000000001Z", "2026-01-02T13:00:00.0009+01:00"} {
		ms, err := ParseTimeBound(since, at)
		if err == nil {
			f := Filter{Since: ms}
			t.Errorf("since %s: parsed to %d ms (receipt at %d matches: %v), not refused", since, ms, r.Timestamp, f.Match(r))
		}
	}
	// Whole milliseconds, in any spelling, still parse.
	for _, ok := range []string{"2026-01-02T12:00:00Z", "2026-01-02T12:00:00.5Z", "2026-01-02T12:00:00.123000Z"} {
		if _, err := ParseTimeBound(ok, at); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}
