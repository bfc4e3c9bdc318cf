package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// TestDashboardRefusesATokenTooLargeBeforeSigning: chiod takes a token of
// at most 64 KiB (approval.MaxTokenBytes). Each typed answer of a question
// form may hold 4000 bytes (approval.MaxAnswerText), and the form checks
// each, but not what they make together: seventeen text answers of 4000
// bytes, each one the form and chiod take, made a token of over 68000
// bytes that the form signed and sent, only for chiod to refuse it. The
// form refuses it first, before anything is signed, saying how large it is.
func TestDashboardRefusesATokenTooLargeBeforeSigning(t *testing.T) {
	chromium(t)
	lk := startLiveKernel(t, `"dashboard"`, "", nil, mountDashboard(t))
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/respond") {
			sent.Add(1)
		}
		lk.api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	var qs []string
	for i := range 17 {
		qs = append(qs, fmt.Sprintf(`{"id":"q%d","text":"Part %d?","type":"text"}`, i, i))
	}
	out := lk.submit(t, "ask", "ask", `{"prompt":"Long report","questions":[`+strings.Join(qs, ",")+`]}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("ask: %+v", out)
	}
	ctx := newBrowser(t)
	sel := card(out.ApprovalRequestID)
	browse(t, ctx, "open, import key, answer every question with 4000 bytes",
		chromedp.Navigate(srv.URL+"/dashboard/"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitVisible(css(sel)),
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('`+sel+` .answer-text').forEach((t) => { t.value = 'a'.repeat(4000); })`),
		press(sel+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(sel+" .card-error")))
	msg := read(t, ctx, "card error", chromedp.Text(css(sel+" .card-error")))
	if n := sent.Load(); n != 0 || !strings.Contains(msg, "65536") || !strings.Contains(msg, "Nothing was signed") {
		t.Fatalf("17 answers of 4000 bytes: sent %d time(s), the card says %q; want the form to refuse the token over chio's 65536 bytes before signing it", n, msg)
	}
}
