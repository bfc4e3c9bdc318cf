package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// browserClockBehind sets the clock of every page the browser opens
// from now on d behind the real one (Date.now; the dashboard signs with it).
func browserClockBehind(d time.Duration) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		src := fmt.Sprintf(`(() => { const real = Date.now; Date.now = () => real() - %d; })();`, d.Milliseconds())
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
		return chromedp.Void{}, err
	}
}

// TestDashboardSignsAnEmailLinkOnChiodsClock: signed in, the dashboard
// signs its tokens on chiod's clock (it takes the offset from the session
// challenge); opened from an email link it signed on the browser's own:
// a laptop 15 minutes slow signed a token that had expired when it was
// issued (10 minutes of life), and chiod refused the approval ("token
// expired") that the same approver's signed-in dashboard would have
// made. The email link page must sign on chiod's clock too.
func TestDashboardSignsAnEmailLinkOnChiodsClock(t *testing.T) {
	chromium(t)
	mb := startMailbox(t)
	ek := startEmailKernel(t, mb)
	lk := ek.liveKernel
	pend := lk.pendingRefund(t, 450, "Refund for a damaged order")
	var link string
	for _, m := range mb.wait(t, 2) {
		if _, text, _ := parts(t, m.data); m.to[0] == "finance@example.com" {
			link = linkRE.FindString(text)
		}
	}
	if link == "" {
		t.Fatal("no link mailed to the Finance Lead")
	}
	ctx := newBrowser(t)
	c := card(pend.ApprovalRequestID)
	browse(t, ctx, "email link in the dashboard, 15 minutes slow",
		browserClockBehind(15*time.Minute),
		chromedp.Navigate(link),
		press("#open-dashboard"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitVisible(css(c)),
		chromedp.WaitReady(css(`#live[data-state="live"]`)),
		press(c+` button[data-action="approve"]`),
		chromedp.WaitReady(css(c+" .card-ok:not([hidden]), "+c+" .card-error:not([hidden])")),
	)
	if msg := read(t, ctx, "card error", chromedp.Evaluate[string](`document.querySelector('`+c+` .card-error').textContent`)); msg != "" {
		t.Fatalf("approving from the email link with the browser's clock 15 minutes slow: %q", msg)
	}
	r := lk.finalReceipt(t, pend.ApprovalRequestID)
	if r.Decision.Verdict != "allow" {
		t.Fatalf("final receipt %s, want allow", r.Decision.Verdict)
	}
}
