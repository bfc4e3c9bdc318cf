package dispatch

import (
	"testing"
	"time"
)

// A tool server's Retry-After is capped at MaxRetryAfter, however large:
// seconds beyond what a time.Duration holds must not wrap around into a
// short (or negative) wait, so that the kernel would call again sooner
// than the server asked.
func TestRetryAfterDoesNotWrapAround(t *testing.T) {
	for _, v := range []string{"61", "86400", "9223372037", "18446744074", "99999999999999999", "99999999999999999999999"} {
		if got := retryAfter(v); got != MaxRetryAfter {
			t.Errorf("Retry-After: %s read as %v, want the cap %v", v, got, MaxRetryAfter)
		}
	}
	for v, want := range map[string]time.Duration{"0": 0, "2": 2 * time.Second, "60": MaxRetryAfter, "-5": 0, "junk": 0} {
		if got := retryAfter(v); got != want {
			t.Errorf("Retry-After: %s read as %v, want %v", v, got, want)
		}
	}
}
