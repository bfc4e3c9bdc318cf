package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
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

// TestDashboardSignedOutEverywhereTakesTheKeyAgainAtOnce: a page told
// signed_out_everywhere by a read (not by a sign-in, which clears the
// ended cookie) kept the ended cookie, so importing the key again
// presented it, was refused the same way and lost the key once more: the
// approver had to import it twice. The page must sign in the first time.
func TestDashboardSignedOutEverywhereTakesTheKeyAgainAtOnce(t *testing.T) {
	lk, open := dashboardAsLead(t)
	shared := open()
	// No stream to notice the sign-out: the page's next read does.
	browse(t, shared, "close the stream",
		chromedp.Evaluate[chromedp.Void](`state.es.close()`))
	lead, err := keys.LoadPrivateKey(filepath.Join(repoRoot(), "examples", "keys", "finance-lead.pem"))
	if err != nil {
		t.Fatal(err)
	}
	endAllSessions(t, lk.url, signInAt(t, lk.url, lead))
	browse(t, shared, "a read is told signed out everywhere", press("#tab-history"), chromedp.WaitVisible(css("#setup")))
	browse(t, shared, "import the key again",
		chromedp.Evaluate[chromedp.Void](`window.told = state.signedOutAll`),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		// Signed in, or told signed out everywhere again.
		chromedp.Evaluate[chromedp.Void](`new Promise((done) => { const poll = () => {
			if (state.me || (state.signedOutAll && state.signedOutAll !== window.told)) done(); else setTimeout(poll, 20); }; poll(); })`, chromedp.EvalAwaitPromise),
	)
	if !read(t, shared, "signed in", chromedp.Evaluate[bool](`!!state.me`)) {
		t.Error("importing the key again after being signed out everywhere was refused the same way: the key is gone again")
	}
}

// endAllSessions presses Sign out everywhere as session id.
func endAllSessions(t *testing.T, base, id string) {
	t.Helper()
	req, _ := http.NewRequest("DELETE", base+"/v1/sessions", nil)
	req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: id})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("DELETE /v1/sessions: %d", resp.StatusCode)
	}
}
