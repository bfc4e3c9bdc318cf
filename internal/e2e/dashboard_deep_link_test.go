package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

// TestDashboardDeepLinkShowsItsRequest: Slack's "Review & sign" opens
// /dashboard/#request=ar-…, for one request. The page only highlighted
// that request if the stream happened to send it: with more requests
// pending than a stream replays (the oldest MaxStreamReplay), a newer
// one's link opened a page without it, nothing said, so the approver
// could neither read nor sign it there; and a link to a request decided
// meanwhile showed nothing either. The linked request must be shown, or
// the page must say it is no longer pending.
func TestDashboardDeepLinkShowsItsRequest(t *testing.T) {
	chromium(t)
	lk := startLiveKernel(t, `"dashboard"`, "", nil, mountDashboard(t))
	for i := 0; i < httpapi.MaxStreamReplay; i++ {
		lk.pendingRefund(t, 300+i, "refund "+strconv.Itoa(i))
	}
	linked := lk.pendingRefund(t, 777, "the linked refund")
	gone := lk.pendingRefund(t, 778, "a refund cancelled before its link is opened")
	if _, err := lk.k.Cancel(t.Context(), gone.ApprovalRequestID, "withdrawn", kernel.CancelledByAdmin); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	browse(t, ctx, "import the key on a page with no link",
		chromedp.Navigate(lk.url+"/dashboard/"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitReady(css(`#live[data-state="live"]`)),
	)
	poll := func(what, js string, ok func(string) bool) {
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := read(t, ctx, what, chromedp.Evaluate[string](js))
			if ok(s) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the page shows %q", what, s)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	browse(t, ctx, "open the link of a request past the replay",
		chromedp.Navigate(lk.url+"/dashboard/#request="+linked.ApprovalRequestID), chromedp.Reload(),
		chromedp.WaitReady(css(`#live[data-state="live"]`)))
	poll("the linked request, past the replay", `(document.querySelector('`+card(linked.ApprovalRequestID)+`.focused') || {}).textContent || ''`,
		func(s string) bool { return strings.Contains(s, "the linked refund") })

	browse(t, ctx, "open the link of a cancelled request",
		chromedp.Navigate(lk.url+"/dashboard/#request="+gone.ApprovalRequestID), chromedp.Reload(),
		chromedp.WaitReady(css(`#live[data-state="live"]`)))
	poll("the linked request, cancelled", `document.body.innerText`,
		func(s string) bool {
			return strings.Contains(s, gone.ApprovalRequestID) && strings.Contains(s, "cancelled")
		})
}
