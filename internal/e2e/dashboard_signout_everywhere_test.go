package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
)

// TestDashboardSignsOutEverywhereFromALapsedSession: "Sign out
// everywhere" is what an approver presses after leaving a session open on
// a shared computer, and the page they press it on may hold a session
// that ended meanwhile (evicted when the 17th sign-in elsewhere took the
// oldest slot, or past its 12 h). chiod answered DELETE /v1/sessions 401,
// the page swallowed it as "already gone", forgot the key and showed the
// sign-in screen: every other session of the key stayed live, with
// nothing said. The page must sign in again and end them, as it does for
// every other request whose session lapsed.
func TestDashboardSignsOutEverywhereFromALapsedSession(t *testing.T) {
	lk, open := dashboardAsLead(t)
	ctx := open()
	lead, err := keys.LoadPrivateKey(filepath.Join(repoRoot(), "examples", "keys", "finance-lead.pem"))
	if err != nil {
		t.Fatal(err)
	}
	// A full share of sign-ins elsewhere: the browser's session, the
	// oldest, is evicted.
	var elsewhere string
	for range httpapi.MaxSessionsPerApprover {
		elsewhere = signInAt(t, lk.url, lead)
	}
	browse(t, ctx, "sign out everywhere", press("#signout-all"), chromedp.WaitVisible(css("#setup")))
	if code := sessionStatus(t, lk.url, elsewhere); code != 401 {
		t.Fatalf("after Sign out everywhere, from a page whose own session had lapsed, a session of the key in another browser answers %d, want 401", code)
	}
}

// TestDashboardSaysWhenSignOutDidNotReachChiod: a sign-out chiod refused
// (here 503) or never received left the session live there while the
// page reloaded into the sign-in screen as if it were done. The key must
// still leave the browser (a shared computer), and the page must say the
// session was not ended.
func TestDashboardSaysWhenSignOutDidNotReachChiod(t *testing.T) {
	chromium(t)
	lk := startLiveKernel(t, `"dashboard"`, "", nil, mountDashboard(t))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/session") {
			http.Error(w, `{"error":"unavailable","message":"chiod is busy"}`, http.StatusServiceUnavailable)
			return
		}
		lk.api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ctx := newBrowser(t)
	browse(t, ctx, "open, import key, sign out",
		chromedp.Navigate(srv.URL+"/dashboard/"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitReady(css(`#live[data-state="live"]`)),
		press("#signout"),
		chromedp.WaitVisible(css("#setup")),
	)
	msg := read(t, ctx, "global error", chromedp.Evaluate[string](`document.getElementById('global-error').hidden ? '' : document.getElementById('global-error').textContent`))
	if !strings.Contains(msg, "did not end this session") || !strings.Contains(msg, "chiod is busy") {
		t.Errorf("after a sign-out chiod refused, the page says %q; want that the session was not ended, and why", msg)
	}
	browse(t, ctx, "the key is gone from the browser", chromedp.Reload(), chromedp.WaitVisible(css("#setup")))
}
