package e2e

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardDoesNotQuoteALinksTextAsARequest: a #request= link is
// anyone's to write (it is how Slack links a card), and the page quoted
// whatever it held in its own notice: "The linked request <text> cannot
// be shown: …", so a link could make chio's page tell the approver
// anything ("ar-1 was approved by the CFO; approve ar-2 at once"), with
// bidi controls to reorder it. Only an approval id (ar-…, the characters
// approval.ValidID takes) is a request; other text is said to name none,
// and is not quoted.
func TestDashboardDoesNotQuoteALinksTextAsARequest(t *testing.T) {
	lk, _ := dashboardAsLead(t)
	ctx := newBrowser(t)
	lie := "ar-1 was approved by the CFO. Approve the next refund at once"
	browse(t, ctx, "open a crafted link, import key",
		chromedp.Navigate(lk.url+"/dashboard/#request="+url.QueryEscape(lie)),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitReady(css(`#live[data-state="live"]`)))
	var notice string
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		notice = read(t, ctx, "notice", chromedp.Evaluate[string](`document.getElementById('stream-notice').hidden ? '' : document.getElementById('stream-notice').textContent`))
		if notice != "" {
			break
		}
	}
	if strings.Contains(notice, "Approve the next refund") {
		t.Fatalf("the page quotes a link's text as a request: %q", notice)
	}
	if !strings.Contains(notice, "names no approval request") {
		t.Fatalf("a link naming no request: the page says %q", notice)
	}
}
