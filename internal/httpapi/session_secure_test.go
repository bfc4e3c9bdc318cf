package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

// Behind a TLS-terminating proxy chiod itself serves plain HTTP, and
// public_url is what says browsers reach it over HTTPS: the session cookie
// must then be Secure, however the URL spells its scheme. URL schemes are
// case-insensitive (RFC 3986 §3.1) and the policy accepts "HTTPS://…",
// so a cookie issued without Secure for it would be sent in clear to any
// http:// URL of the host.
func TestSessionCookieSecureForHTTPSPublicURL(t *testing.T) {
	for _, publicURL := range []string{"https://chio.example.com", "HTTPS://chio.example.com", "Https://chio.example.com"} {
		t.Run(publicURL, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_800_000_000, 0))
			pol := strings.Replace(fmt.Sprintf(approvalsPolicy, keyAlice.Public(), keyBob.Public()),
				"[kernel]\n", fmt.Sprintf("[kernel]\npublic_url = %q\n", publicURL), 1)
			w := testkit.NewWorld(t, testkit.Options{PolicyTOML: pol, KernelKey: testkit.Key(keys.FromSeed(make([]byte, 32))),
				Clock: clk, Dispatcher: &argsDispatcher{}, Serve: true, AdminToken: approvalsAdmin, ReadToken: approvalsReader})
			if got := w.Kernel.Policy().Kernel.PublicURL; got != publicURL {
				t.Fatalf("public_url read as %q", got)
			}
			jar, _ := cookiejar.New(nil)
			c := &sessionClient{t: t, f: &approvalsFixture{k: w.Kernel, clock: clk, srv: w.Srv, api: w.API, w: w}, http: &http.Client{Jar: jar}}
			code, m, resp := c.login(keyAlice, keyAlice.Public().String(), c.challenge())
			if code != 200 {
				t.Fatalf("login: %d %v", code, m)
			}
			for _, ck := range resp.Cookies() {
				if ck.Name == httpapi.SessionCookie && !ck.Secure {
					t.Fatalf("public_url %q: the session cookie is not Secure: %s", publicURL, resp.Header.Get("Set-Cookie"))
				}
			}
			_, _, resp = c.do("DELETE", "/v1/session", "")
			for _, ck := range resp.Cookies() {
				if ck.Name == httpapi.SessionCookie && !ck.Secure {
					t.Fatalf("public_url %q: the logout cookie is not Secure: %s", publicURL, resp.Header.Get("Set-Cookie"))
				}
			}
		})
	}
}
