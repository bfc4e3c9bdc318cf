package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// TestDashboardRefusesAnOtherAnswerRepeatingATickedChoiceBeforeSigning: in
// a multiple-choice question, ticking "unit" and typing "unit" under
// Other gave the answer ["unit","unit"], which chiod refuses (a tool
// acting once per pick would act twice on one choice). The page signed
// it and sent it, and only then told the approver no, in chiod's words:
// the approver had signed a decision they never meant. The form refuses
// it itself, saying why, with nothing signed or sent.
func TestDashboardRefusesAnOtherAnswerRepeatingATickedChoiceBeforeSigning(t *testing.T) {
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
	out := lk.submit(t, "ask", "ask", `{"prompt":"Which checks?","questions":[`+
		`{"id":"checks","text":"Which checks ran?","type":"multi","options":["unit","e2e"],"allow_other":true}]}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("ask: %+v", out)
	}
	ctx := newBrowser(t)
	sel := card(out.ApprovalRequestID)
	browse(t, ctx, "open, import key, answer unit twice",
		chromedp.Navigate(srv.URL+"/dashboard/"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitVisible(css(sel)),
		press(sel+` input[value="unit"]`),
		chromedp.SetValue(css(sel+" .answer-other"), " unit "),
		press(sel+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(sel+" .card-error")))
	msg := read(t, ctx, "card error", chromedp.Text(css(sel+" .card-error")))
	if n := sent.Load(); n != 0 {
		t.Fatalf("an Other answer repeating a ticked choice was signed and sent %d time(s); the card then says %q", n, msg)
	}
	if !strings.Contains(msg, "unit") || !strings.Contains(msg, "Other") {
		t.Fatalf("the card refuses the repeated answer saying %q; want the choice named and Other", msg)
	}
	// Untyped, the answer goes through.
	waiter := lk.awaitCall(t, out.RequestID)
	browse(t, ctx, "answer once",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel+` .answer-other').value = ''`),
		press(sel+` button[data-action="approve"]`))
	if st := ranWithin(waiter, 20*time.Second); st == nil || !strings.Contains(string(st.Output), `"checks":["unit"]`) {
		t.Fatalf("the answer unit alone: the call %+v", st)
	}
}
