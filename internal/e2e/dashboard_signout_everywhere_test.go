package e2e

import (
	"path/filepath"
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
