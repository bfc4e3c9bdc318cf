package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
)

// DELETE /v1/sessions signs the presented session's approver out of every
// browser: an approver who left a session open on a shared computer, or
// suspects a copied cookie, ends them all from the one they hold. Other
// approvers' sessions stay; without a live session (or beside a wrong
// bearer) it is 401 and ends nothing.
func TestSignOutEverywhereEndsOnlyThatApproversSessions(t *testing.T) {
	f := newApprovalsFixture(t)
	alice, bob := keyAlice.Public().String(), keyBob.Public().String()
	signIn := func(k keys.PrivateKey, pub string) (*sessionClient, string) {
		c := newSessionClient(t, f)
		code, m, resp := c.login(k, pub, c.challenge())
		if code != 200 {
			t.Fatalf("sign-in %s: %d %v", pub, code, m)
		}
		return c, setSessionID(t, resp)
	}
	a1, a1id := signIn(keyAlice, alice)
	_, a2id := signIn(keyAlice, alice)
	_, bid := signIn(keyBob, bob)

	// Refused: no session, a bearer alone, a wrong bearer beside Alice's.
	for name, set := range map[string]func(*http.Request){
		"none":         func(*http.Request) {},
		"admin bearer": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+approvalsAdmin) },
		"ended cookie": func(r *http.Request) { r.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: "AAAA"}) },
		"bad bearer beside a session": func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer nope-nope-nope-nope-nope-nope-nope")
			r.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: a1id})
		},
	} {
		req, _ := http.NewRequest("DELETE", f.srv.URL+"/v1/sessions", nil)
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("%s: %d, want 401", name, resp.StatusCode)
		}
	}
	for _, id := range []string{a1id, a2id, bid} {
		if got := sessionCode(t, f, id); got != 200 {
			t.Fatalf("a refused sign-out-everywhere ended a session: %d", got)
		}
	}

	code, m, resp := a1.do("DELETE", "/v1/sessions", "")
	if code != 200 || m["sessions_ended"] != float64(2) {
		t.Fatalf("sign out everywhere: %d %v", code, m)
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || c.Name == httpapi.SessionCookie && c.MaxAge < 0
	}
	if !cleared {
		t.Error("the browser's cookie was not cleared")
	}
	for name, id := range map[string]string{"this browser": a1id, "Alice's other browser": a2id} {
		if got := sessionCode(t, f, id); got != 401 {
			t.Errorf("%s still answers %d, want 401", name, got)
		}
	}
	if got := sessionCode(t, f, bid); got != 200 {
		t.Errorf("Bob was signed out too: %d", got)
	}
}
