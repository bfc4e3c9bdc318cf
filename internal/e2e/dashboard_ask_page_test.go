package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// askPage is an ask call parked and shown on the dashboard, signed in as
// the finance lead, with the votes the page sends counted: the form tests
// check that a decision chiod would refuse is never signed and sent.
type askPage struct {
	lk   *liveKernel
	out  *kernel.Outcome
	ctx  context.Context
	sel  string        // the call's card
	sent *atomic.Int32 // POST …/respond requests the page sent
}

// openAskPage parks an ask call of args and opens its card.
func openAskPage(t *testing.T, args string) *askPage {
	t.Helper()
	chromium(t)
	lk := startLiveKernel(t, `"dashboard"`, "", nil, mountDashboard(t))
	sent := &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/respond") {
			sent.Add(1)
		}
		lk.api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	out := lk.submit(t, "ask", "ask", args, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("ask: %+v", out)
	}
	p := &askPage{lk: lk, out: out, ctx: newBrowser(t), sel: card(out.ApprovalRequestID), sent: sent}
	browse(t, p.ctx, "open, import key",
		chromedp.Navigate(srv.URL+"/dashboard/"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitVisible(css(p.sel)))
	return p
}
