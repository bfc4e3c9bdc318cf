package mcpgw

import (
	"encoding/json"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A wait an agent asks for is capped at MaxWait however large: seconds
// past what a time.Duration holds must not wrap around into a short or
// negative wait (the call answered "pending" at once instead of held).
func TestWaitIsCappedNotWrapped(t *testing.T) {
	for _, f := range []float64{601, 1e10, 1.8446744074e10, 1e300} {
		if got := waitFor(mcpsdk.Meta{MetaWait: f}, time.Second); got != MaxWait {
			t.Errorf("_meta wait_seconds %g: %v, want %v", f, got, MaxWait)
		}
	}
	if got := waitFor(mcpsdk.Meta{MetaWait: 2.0}, time.Second); got != 2*time.Second {
		t.Errorf("wait_seconds 2: %v", got)
	}
	// chio_await's wait_seconds is refused past MaxWait, not capped
	// (await_wait_range_test.go); past what a Duration holds too.
	for _, f := range []string{"9223372037", "18446744074", "1e300"} {
		if got, err := awaitWait(json.RawMessage(f), time.Second); err == nil {
			t.Errorf("chio_await wait_seconds %s: %v, want refused", f, got)
		}
	}
}
