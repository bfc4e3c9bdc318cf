package cli

import (
	"testing"
	"time"
)

// A Retry-After too large for a time.Duration (a proxy's, or a hostile
// server's) must not wrap around into a short or negative delay: "try
// again in 290ms" for a server that said "not for centuries".
func TestRetryDelayDoesNotWrapAround(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, h := range []string{"9223372037", "18446744074", "99999999999999"} {
		if d := retryDelay(h, now); d < 24*time.Hour {
			t.Errorf("Retry-After: %s read as %v", h, d)
		}
	}
	if d := retryDelay("10", now); d != 10*time.Second {
		t.Errorf("Retry-After: 10 read as %v", d)
	}
}
