package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// Login CSRF. Anyone may fetch a sign-in challenge, and an approver (a
// malicious insider) can sign one with their own key; a page on another
// site could then post that sign-in from a victim's browser (an HTML form
// with enctype text/plain carries a JSON body), and the victim's dashboard
// would be signed in as that approver, showing that approver's view and
// name. A browser says where a request comes from (Sec-Fetch-Site,
// Origin): a sign-in from another site, or from a page of another origin,
// is refused and sets no cookie. Clients that are not browsers send
// neither header and are unaffected.
func TestSignInFromAnotherSiteIsRefused(t *testing.T) {
	f := newApprovalsFixture(t)
	c := newSessionClient(t, f)
	for _, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
		{"Sec-Fetch-Site": "same-site", "Origin": "https://evil.example.com"},
		{"Origin": "https://evil.example"},
	} {
		ch := c.challenge()
		body := loginBody(keyAlice.Public().String(), ch, sessionSig(t, keyAlice, keyAlice.Public().String(), ch))
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/session", strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Fatalf("a sign-in posted with %v: %d, cookies %v; want 401 and no session", hdr, resp.StatusCode, resp.Cookies())
		}
	}
	// The dashboard's own sign-in (same origin) and a non-browser client work.
	for _, hdr := range []map[string]string{{"Sec-Fetch-Site": "same-origin", "Origin": f.srv.URL}, {}} {
		ch := c.challenge()
		body := loginBody(keyAlice.Public().String(), ch, sessionSig(t, keyAlice, keyAlice.Public().String(), ch))
		req, _ := http.NewRequest("POST", f.srv.URL+"/v1/session", strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
			t.Fatalf("a sign-in posted with %v: %d; want 200 and a session", hdr, resp.StatusCode)
		}
	}
}
