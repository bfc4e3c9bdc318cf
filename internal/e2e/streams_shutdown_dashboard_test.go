package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardSaysChiodIsShuttingDown: once chiod's shutdown has begun,
// its live stream ends and a new one is refused (503); the dashboard says
// why (EventSource alone does not tell it) and keeps reconnecting, backing
// off, instead of showing "live" between streams that end at once.
func TestDashboardSaysChiodIsShuttingDown(t *testing.T) {
	lk, open := dashboardAsLead(t)
	ctx := open()
	lk.api.CloseStreams() // as chiod's graceful shutdown does; this server still answers
	browse(t, ctx, "the dashboard says chiod is shutting down",
		chromedp.WaitVisible(css("#global-error")),
		chromedp.WaitReady(css(`#live[data-state="down"]`)))
	msg := read(t, ctx, "global error", chromedp.Text(css("#global-error")))
	if !strings.Contains(msg, "chiod is shutting down") || !strings.Contains(msg, "Retrying in") {
		t.Fatalf("the dashboard says %q, want that chiod is shutting down and when it retries", msg)
	}
}
