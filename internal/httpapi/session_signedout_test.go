package httpapi_test

import (
	"testing"

	"github.com/chiokernel/chio/internal/httpapi"
)

// A session ended by "Sign out everywhere" must not read as one that just
// lapsed: the dashboard signs in again on every 401 (its stream, its
// retry, each page load), and a page left open on a shared computer still
// holds the key, so it signed straight back in. chiod answers such a
// session's next requests — reads, the stream's route, a sign-in that
// presents it — 401 signed_out_everywhere, which the page reads as "forget
// the key". A sign-in presenting it is refused and its cookie cleared, so
// the key, imported again on purpose, signs in; other approvers and fresh
// browsers are untouched.
const signedOutEverywhere = "signed_out_everywhere"

func TestSignedOutEverywhereSessionGetsItsOwnCode(t *testing.T) {
	f := newApprovalsFixture(t)
	alice, bob := keyAlice.Public().String(), keyBob.Public().String()
	a1 := newSessionClient(t, f)
	if code, m, _ := a1.login(keyAlice, alice, a1.challenge()); code != 200 {
		t.Fatalf("sign-in: %d %v", code, m)
	}
	a2 := newSessionClient(t, f) // the page left open elsewhere
	if code, m, _ := a2.login(keyAlice, alice, a2.challenge()); code != 200 {
		t.Fatalf("sign-in: %d %v", code, m)
	}
	b := newSessionClient(t, f)
	if code, m, _ := b.login(keyBob, bob, b.challenge()); code != 200 {
		t.Fatalf("sign-in: %d %v", code, m)
	}
	if code, m, _ := a1.do("DELETE", "/v1/sessions", ""); code != 200 {
		t.Fatalf("sign out everywhere: %d %v", code, m)
	}
	for _, path := range []string{"/v1/session", "/approvals/pending", "/approvals/stream"} {
		code, m, _ := a2.do("GET", path, "")
		if code != 401 || m["error"] != signedOutEverywhere {
			t.Errorf("GET %s with a session ended by sign-out-everywhere: %d %v, want 401 %s", path, code, m, signedOutEverywhere)
		}
	}
	code, m, resp := a2.login(keyAlice, alice, a2.challenge())
	if code != 401 || m["error"] != signedOutEverywhere {
		t.Fatalf("a sign-in presenting a session ended by sign-out-everywhere: %d %v, want 401 %s", code, m, signedOutEverywhere)
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || c.Name == httpapi.SessionCookie && c.MaxAge < 0
	}
	if !cleared {
		t.Error("the refused sign-in did not clear the ended session's cookie")
	}
	// The key imported again on purpose: a sign-in with no ended cookie.
	if code, m, _ := a2.login(keyAlice, alice, a2.challenge()); code != 200 {
		t.Errorf("a deliberate sign-in after the refusal: %d %v", code, m)
	}
	if code, m, _ := b.do("GET", "/v1/session", ""); code != 200 {
		t.Errorf("Bob's session: %d %v", code, m)
	}
	// The browser that signed out everywhere signs in afresh.
	if code, m, _ := a1.login(keyAlice, alice, a1.challenge()); code != 200 {
		t.Errorf("sign-in from the browser that signed out everywhere: %d %v", code, m)
	}
}
