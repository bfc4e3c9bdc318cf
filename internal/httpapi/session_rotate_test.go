package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/chiokernel/chio/internal/httpapi"
)

// setSessionID returns the session id resp sets, or fails.
func setSessionID(t *testing.T, resp *http.Response) string {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.SessionCookie && c.Value != "" {
			return c.Value
		}
	}
	t.Fatalf("no %s cookie set", httpapi.SessionCookie)
	return ""
}

// sessionCode is GET /v1/session's status for a bare session cookie id.
func sessionCode(t *testing.T, f *approvalsFixture, id string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+"/v1/session", nil)
	req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: id})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Signing in again over a session rotates it: the browser gets a fresh id
// and the id it presented ends server-side. Otherwise an approver who
// signs in again because they suspect their cookie was copied (or just
// reloads the dashboard, which signs in on every load) leaves the old id
// working for whoever holds it, for the rest of its 12 hours.
func TestSignInAgainEndsThePresentedSession(t *testing.T) {
	f := newApprovalsFixture(t)
	alice := keyAlice.Public().String()
	c := newSessionClient(t, f)
	code, m, resp := c.login(keyAlice, alice, c.challenge())
	if code != 200 {
		t.Fatalf("first sign-in: %d %v", code, m)
	}
	old := setSessionID(t, resp)

	// Another browser of Alice's, signed in meanwhile, is not this one's
	// to end.
	other := newSessionClient(t, f)
	code, m, resp = other.login(keyAlice, alice, other.challenge())
	if code != 200 {
		t.Fatalf("other browser's sign-in: %d %v", code, m)
	}
	otherID := setSessionID(t, resp)

	code, m, resp = c.login(keyAlice, alice, c.challenge()) // the jar presents old
	if code != 200 {
		t.Fatalf("second sign-in: %d %v", code, m)
	}
	fresh := setSessionID(t, resp)
	if fresh == old {
		t.Fatal("signing in again kept the session id (no rotation)")
	}
	if got := sessionCode(t, f, old); got != 401 {
		t.Fatalf("the session signed in over still answers %d, want 401: signing in again must end it", got)
	}
	if got := sessionCode(t, f, fresh); got != 200 {
		t.Fatalf("the fresh session: %d", got)
	}
	if got := sessionCode(t, f, otherID); got != 200 {
		t.Fatalf("Alice's other browser was signed out: %d", got)
	}
}

// A sign-in that fails leaves the session it was presented with alone:
// only a sign-in that lets someone in replaces one.
func TestFailedSignInKeepsThePresentedSession(t *testing.T) {
	f := newApprovalsFixture(t)
	alice := keyAlice.Public().String()
	c := newSessionClient(t, f)
	code, m, resp := c.login(keyAlice, alice, c.challenge())
	if code != 200 {
		t.Fatalf("sign-in: %d %v", code, m)
	}
	id := setSessionID(t, resp)
	if code, _, _ := c.login(keyMallory, alice, c.challenge()); code != 401 {
		t.Fatalf("forged sign-in: %d", code)
	}
	if got := sessionCode(t, f, id); got != 200 {
		t.Fatalf("a refused sign-in ended the session it was presented with: %d", got)
	}
}
