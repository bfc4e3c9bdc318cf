package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/internal/httpapi"
)

// TestDashboardShowsTruncatedReplay: with more requests pending than a
// stream replays, the dashboard shows the replayed ones and says that more
// are waiting; a request made afterwards still arrives live.
func TestDashboardShowsTruncatedReplay(t *testing.T) {
	chromium(t)
	lk := startLiveKernel(t, `"dashboard"`, "", nil, mountDashboard(t))
	for i := 0; i < httpapi.MaxStreamReplay+2; i++ {
		lk.pendingRefund(t, 300+i, "refund "+strconv.Itoa(i))
	}
	ctx := newBrowser(t)
	browse(t, ctx, "open and import key",
		chromedp.Navigate(lk.url+"/dashboard/"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitReady(css(`#live[data-state="live"]`)),
		chromedp.WaitVisible(css("#stream-notice")),
	)
	notice := read(t, ctx, "notice", chromedp.Text(css("#stream-notice")))
	if !strings.Contains(notice, "oldest "+strconv.Itoa(httpapi.MaxStreamReplay)+" pending") || !strings.Contains(notice, "chio approval list") {
		t.Fatalf("notice %q", notice)
	}
	if n := read(t, ctx, "pending count", chromedp.Text(css("#pending-count"))); n != strconv.Itoa(httpapi.MaxStreamReplay) {
		t.Fatalf("pending count %s, want the %d replayed", n, httpapi.MaxStreamReplay)
	}
	live := lk.pendingRefund(t, 999, "arrives live")
	browse(t, ctx, "live card after a truncated replay", chromedp.WaitVisible(css(card(live.ApprovalRequestID))))
}
