package httpapi_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// sessionClient is a browser-like client with a cookie jar.
type sessionClient struct {
	t    *testing.T
	f    *approvalsFixture
	http *http.Client
}

func newSessionClient(t *testing.T, f *approvalsFixture) *sessionClient {
	jar, _ := cookiejar.New(nil)
	return &sessionClient{t: t, f: f, http: &http.Client{Jar: jar}}
}

func (c *sessionClient) do(method, path, body string) (int, map[string]any, *http.Response) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.f.srv.URL+path, strings.NewReader(body))
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, resp
}

func (c *sessionClient) challenge() string {
	c.t.Helper()
	code, m, _ := c.do("GET", "/v1/session/challenge", "")
	if code != 200 {
		c.t.Fatalf("challenge: %d %v", code, m)
	}
	if exp, _ := m["expires_at"].(float64); int64(exp) != c.f.clock.Now().Add(httpapi.ChallengeTTL).Unix() {
		c.t.Fatalf("expires_at = %v", m["expires_at"])
	}
	return m["challenge"].(string)
}

func sessionSig(t *testing.T, k keys.PrivateKey, pub, challenge string) string {
	payload, err := canon.Marshal(map[string]string{"challenge": challenge, "public_key": pub})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(k.SignRaw(signed.Message(httpapi.SessionDomain, payload)))
}

func loginBody(pub, challenge, sig string) string {
	b, _ := json.Marshal(httpapi.SessionLogin{PublicKey: pub, Challenge: challenge, Signature: sig})
	return string(b)
}

// login signs challenge with signer, presenting claimed as the key.
func (c *sessionClient) login(signer keys.PrivateKey, claimed, challenge string) (int, map[string]any, *http.Response) {
	return c.do("POST", "/v1/session", loginBody(claimed, challenge, sessionSig(c.t, signer, claimed, challenge)))
}

func TestApproverSession(t *testing.T) {
	f := newApprovalsFixture(t)
	pending := f.pendingRefund(t)

	t.Run("no session reads nothing", func(t *testing.T) {
		c := newSessionClient(t, f)
		if code, _, _ := c.do("GET", "/approvals/pending", ""); code != 401 {
			t.Fatalf("pending without session: %d", code)
		}
	})

	t.Run("approver signs in and reads", func(t *testing.T) {
		c := newSessionClient(t, f)
		code, m, resp := c.login(keyAlice, keyAlice.Public().String(), c.challenge())
		if code != 200 || m["approver"] != keyAlice.Public().String() || m["display_name"] != "Alice" {
			t.Fatalf("login: %d %v", code, m)
		}
		var ck *http.Cookie
		for _, x := range resp.Cookies() {
			if x.Name == httpapi.SessionCookie {
				ck = x
			}
		}
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" ||
			ck.MaxAge <= 0 || ck.MaxAge > 12*3600 || ck.Secure {
			t.Fatalf("cookie: %+v", ck)
		}
		for _, p := range []string{"/approvals/pending", "/approvals/" + pending.ApprovalRequestID, "/v1/receipts", "/v1/session"} {
			if code, m, _ := c.do("GET", p, ""); code != 200 {
				t.Fatalf("GET %s with session: %d %v", p, code, m)
			}
		}
		// A call's status and output belong to its agent and to token holders,
		// not to every approver.
		if code, m, _ := c.do("GET", "/v1/calls/"+pending.RequestID, ""); code != 401 {
			t.Fatalf("call status with a session: %d %v", code, m)
		}
		// Never an admin route.
		if code, m, _ := c.do("POST", "/v1/capabilities", `{"subject":"`+keyOther.Public().String()+`","grants":["echo"],"ttl":"1h"}`); code != 401 {
			t.Fatalf("admin route with a session: %d %v", code, m)
		}
		if code, _, _ := c.do("DELETE", "/approvals/batch/ba-x", ""); code != 401 {
			t.Fatalf("batch revoke with a session: %d", code)
		}
		// Logout ends it server-side.
		if code, _, _ := c.do("DELETE", "/v1/session", ""); code != 200 {
			t.Fatal("logout")
		}
		req, _ := http.NewRequest("GET", f.srv.URL+"/approvals/pending", nil)
		req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: ck.Value})
		resp2, _ := http.DefaultClient.Do(req)
		resp2.Body.Close()
		if resp2.StatusCode != 401 {
			t.Fatalf("cookie after logout: %d", resp2.StatusCode)
		}
	})

	t.Run("the stream admits a session", func(t *testing.T) {
		c := newSessionClient(t, f)
		if code, m, _ := c.login(keyBob, keyBob.Public().String(), c.challenge()); code != 200 {
			t.Fatalf("login: %d %v", code, m)
		}
		req, _ := http.NewRequest("GET", f.srv.URL+"/approvals/stream", nil)
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})

	t.Run("wrong key", func(t *testing.T) {
		c := newSessionClient(t, f)
		// Signed by Mallory, presented as Alice.
		code, m, _ := c.login(keyMallory, keyAlice.Public().String(), c.challenge())
		if code != 401 || m["error"] != "unauthorized" {
			t.Fatalf("forged signature: %d %v", code, m)
		}
		if code, _, _ := c.do("GET", "/approvals/pending", ""); code != 401 {
			t.Fatal("a refused login must not leave a session")
		}
	})

	t.Run("non-approver key", func(t *testing.T) {
		c := newSessionClient(t, f)
		code, m, _ := c.login(keyMallory, keyMallory.Public().String(), c.challenge())
		if code != 403 || m["error"] != "approval_rejected" || !strings.Contains(m["message"].(string), "not an approver") {
			t.Fatalf("non-approver: %d %v", code, m)
		}
	})

	t.Run("weak or malformed key", func(t *testing.T) {
		c := newSessionClient(t, f)
		code, m, _ := c.do("POST", "/v1/session", loginBody("ed25519:01"+strings.Repeat("00", 31), c.challenge(), strings.Repeat("00", 64)))
		if code != 400 {
			t.Fatalf("identity key: %d %v", code, m)
		}
	})

	t.Run("reused challenge", func(t *testing.T) {
		c := newSessionClient(t, f)
		ch := c.challenge()
		if code, _, _ := c.login(keyAlice, keyAlice.Public().String(), ch); code != 200 {
			t.Fatal("first use")
		}
		if code, m, _ := c.login(keyAlice, keyAlice.Public().String(), ch); code != 401 {
			t.Fatalf("reused challenge: %d %v", code, m)
		}
		// A failed attempt spends nothing (anonymous attempts cannot fill
		// the spent table): the challenge still admits its real signer, once.
		ch = c.challenge()
		if code, _, _ := c.login(keyMallory, keyAlice.Public().String(), ch); code != 401 {
			t.Fatal("forged sign-in")
		}
		if code, _, _ := c.login(keyAlice, keyAlice.Public().String(), ch); code != 200 {
			t.Fatal("a challenge presented by a failed attempt was refused to its signer")
		}
		if code, _, _ := c.login(keyAlice, keyAlice.Public().String(), ch); code != 401 {
			t.Fatal("a challenge admitted two sign-ins")
		}
	})

	t.Run("unknown challenge", func(t *testing.T) {
		c := newSessionClient(t, f)
		if code, _, _ := c.login(keyAlice, keyAlice.Public().String(), "made-up"); code != 401 {
			t.Fatal("unknown challenge accepted")
		}
	})

	t.Run("expired challenge", func(t *testing.T) {
		c := newSessionClient(t, f)
		ch := c.challenge()
		f.clock.Advance(httpapi.ChallengeTTL + time.Second)
		if code, m, _ := c.login(keyAlice, keyAlice.Public().String(), ch); code != 401 {
			t.Fatalf("expired challenge: %d %v", code, m)
		}
	})

	t.Run("forged cookie", func(t *testing.T) {
		for _, v := range []string{"forged", strings.Repeat("A", 43), strings.Repeat("x", 200)} {
			req, _ := http.NewRequest("GET", f.srv.URL+"/approvals/pending", nil)
			req.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: v})
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Fatalf("forged cookie %q: %d", v, resp.StatusCode)
			}
		}
	})

	t.Run("session expires", func(t *testing.T) {
		c := newSessionClient(t, f)
		if code, _, _ := c.login(keyAlice, keyAlice.Public().String(), c.challenge()); code != 200 {
			t.Fatal("login")
		}
		f.clock.Advance(httpapi.SessionTTL + time.Second)
		if code, _, _ := c.do("GET", "/approvals/pending", ""); code != 401 {
			t.Fatalf("expired session admitted: %d", code)
		}
	})

	t.Run("a bad bearer is not rescued by a session", func(t *testing.T) {
		c := newSessionClient(t, f)
		if code, _, _ := c.login(keyAlice, keyAlice.Public().String(), c.challenge()); code != 200 {
			t.Fatal("login")
		}
		req, _ := http.NewRequest("GET", f.srv.URL+"/approvals/pending", nil)
		req.Header.Set("Authorization", "Bearer wrong")
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("bad bearer + session: %d", resp.StatusCode)
		}
	})
}

// Anonymous challenge requests cost no server memory, so a flood of them
// cannot lock approvers out; a forged or altered challenge is refused.
func TestChallengesAreStateless(t *testing.T) {
	f := newApprovalsFixture(t)
	c := newSessionClient(t, f)
	for i := 0; i < 12000; i++ { // above the old 10,000-challenge store
		c.challenge()
	}
	ch := c.challenge()
	forged := ch[:len(ch)-2] + "AA"
	if forged == ch {
		forged = ch[:len(ch)-2] + "BB"
	}
	if code, _, _ := c.login(keyAlice, keyAlice.Public().String(), forged); code != 401 {
		t.Fatalf("forged challenge: %d", code)
	}
	if code, m, _ := c.login(keyAlice, keyAlice.Public().String(), ch); code != 200 {
		t.Fatalf("sign-in after a challenge flood: %d %v", code, m)
	}
	if code, _, _ := c.login(keyAlice, keyAlice.Public().String(), ch); code != 401 {
		t.Fatalf("challenge reused: %d", code)
	}
}

// Over HTTP: an approver signing in past MaxSessionsPerApprover (a new
// browser) gets in, their oldest session's cookie is then refused cleanly
// (401, and that browser can sign in again), and another approver is
// unaffected.
func TestApproverSignInPastCapEvictsOldestSession(t *testing.T) {
	f := newApprovalsFixture(t)
	alice := keyAlice.Public().String()
	bob := newSessionClient(t, f)
	if code, m, _ := bob.login(keyBob, keyBob.Public().String(), bob.challenge()); code != 200 {
		t.Fatalf("bob: %d %v", code, m)
	}
	var browsers []*sessionClient
	for i := 0; i <= httpapi.MaxSessionsPerApprover; i++ {
		c := newSessionClient(t, f)
		if code, m, _ := c.login(keyAlice, alice, c.challenge()); code != 200 {
			t.Fatalf("alice's sign-in %d: %d %v", i, code, m)
		}
		browsers = append(browsers, c)
	}
	for i, c := range browsers {
		code, m, _ := c.do("GET", "/v1/session", "")
		if want := map[bool]int{true: 401, false: 200}[i == 0]; code != want {
			t.Fatalf("alice's session %d: %d %v, want %d", i, code, m, want)
		}
		if i == 0 && m["error"] != "unauthorized" {
			t.Fatalf("evicted session: %v", m)
		}
	}
	if code, _, _ := browsers[0].do("GET", "/approvals/pending", ""); code != 401 {
		t.Fatalf("evicted session read approvals: %d", code)
	}
	if code, m, _ := bob.do("GET", "/v1/session", ""); code != 200 {
		t.Fatalf("bob after alice's sign-ins: %d %v", code, m)
	}
	if code, m, _ := browsers[0].login(keyAlice, alice, browsers[0].challenge()); code != 200 {
		t.Fatalf("the evicted browser signing in again: %d %v", code, m)
	}
	if code, _, _ := browsers[1].do("GET", "/v1/session", ""); code != 401 {
		t.Fatal("signing in again did not evict the next oldest")
	}
}
