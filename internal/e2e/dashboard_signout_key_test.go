package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardSignOutEverywhereTakesTheKeyFromOtherPages: "Sign out
// everywhere" is what an approver presses after leaving the dashboard
// open on a shared computer. It ended that page's session, but the page
// still held the key and signed straight back in (its stream's error
// handler, its retry on 401, any later load). The page must forget the
// key, say why, and hold no session; reloading it must not sign in.
func TestDashboardSignOutEverywhereTakesTheKeyFromOtherPages(t *testing.T) {
	_, open := dashboardAsLead(t)
	mine, shared := open(), open() // two browsers, each with the key
	browse(t, mine, "sign out everywhere", press("#signout-all"), chromedp.WaitVisible(css("#setup")))
	browse(t, shared, "the page left open elsewhere shows the key import screen", chromedp.WaitVisible(css("#setup")))
	msg := read(t, shared, "global error", chromedp.Evaluate[string](`document.getElementById('global-error').hidden ? '' : document.getElementById('global-error').textContent`))
	if !strings.Contains(msg, "signed out everywhere") || !strings.Contains(msg, "import your key again") {
		t.Errorf("the page left open says %q; want that it was signed out everywhere and must import the key again", msg)
	}
	keyLeft := `loadKey().then((k) => !!(k && k.privateKey))`
	if read(t, shared, "key in IndexedDB", chromedp.Evaluate[bool](keyLeft, chromedp.EvalAwaitPromise)) {
		t.Error("the page left open still holds the key in IndexedDB")
	}
	session := `fetch('/v1/session', {credentials: 'same-origin'}).then((r) => r.status)`
	if got := read(t, shared, "session", chromedp.Evaluate[float64](session, chromedp.EvalAwaitPromise)); got != 401 {
		t.Errorf("the page left open holds a session: GET /v1/session answers %v, want 401", got)
	}
	browse(t, shared, "reload: no key, no sign-in", chromedp.Reload(), chromedp.WaitVisible(css("#setup")))
	if got := read(t, shared, "session after reload", chromedp.Evaluate[float64](session, chromedp.EvalAwaitPromise)); got != 401 {
		t.Errorf("after a reload the page left open holds a session: %v, want 401", got)
	}
}
