package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
)

// sessionCookieOf signs k in as an approver and returns the session
// cookie's value ("" when the sign-in is refused: a key in no policy).
func sessionCookieOf(t *testing.T, f *approvalsFixture, k keys.PrivateKey) string {
	t.Helper()
	c := newSessionClient(t, f)
	code, _, resp := c.login(k, k.Public().String(), c.challenge())
	if code != http.StatusOK {
		return ""
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == httpapi.SessionCookie {
			return ck.Value
		}
	}
	return ""
}

// TestAuthzMatrix runs every route of SPEC §6 with every credential: no
// credential, the reader and admin tokens, the sessions of two approvers
// and of a key in no policy, and Chio-Proof headers of the call's agent,
// of another agent, stale, and in the cancel domain. A cell marked ok is
// admitted (any answer but 401/403); every other cell must be refused 401
// without naming what the route is about (no id, no output, no status).
func TestAuthzMatrix(t *testing.T) {
	f := newApprovalsFixture(t)
	pend := f.pendingRefund(t)
	done := f.submit(t, keyAgent, "echo", `{"secret":"s3cr3t-output"}`, "")
	sa, sb, sm := sessionCookieOf(t, f, keyAlice), sessionCookieOf(t, f, keyBob), sessionCookieOf(t, f, keyMallory)
	if sa == "" || sb == "" || sm != "" {
		t.Fatalf("sessions: alice %q bob %q mallory %q (want the approvers in, the key in no policy refused)", sa, sb, sm)
	}
	cookie := func(v string) func(*http.Request, string) {
		return func(r *http.Request, _ string) {
			if v != "" {
				r.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: v})
			}
		}
	}
	proof := func(k keys.PrivateKey, age time.Duration) func(*http.Request, string) {
		return func(r *http.Request, id string) {
			r.Header.Set(httpapi.StatusProofHeader, httpapi.SignStatusProof(k, id, f.clock.Now().Add(-age)))
		}
	}
	creds := []struct {
		name string
		set  func(r *http.Request, id string)
	}{
		{"none", func(*http.Request, string) {}},
		{"reader", func(r *http.Request, _ string) { r.Header.Set("Authorization", "Bearer "+approvalsReader) }},
		{"admin", func(r *http.Request, _ string) { r.Header.Set("Authorization", "Bearer "+approvalsAdmin) }},
		{"session A", cookie(sa)},
		{"session B", cookie(sb)},
		{"session of no approver", cookie(sm)},
		{"own proof", proof(keyAgent, 0)},
		{"other agent's proof", proof(keyOther, 0)},
		{"stale own proof", proof(keyAgent, 2*httpapi.MaxStatusProofSkew)},
		{"own cancel proof", func(r *http.Request, id string) {
			r.Header.Set(httpapi.StatusProofHeader, httpapi.SignCancelProof(keyAgent, id, "x", f.clock.Now()))
		}},
		{"bad bearer with a session", func(r *http.Request, _ string) {
			r.Header.Set("Authorization", "Bearer "+approvalsReader+"x")
			r.AddCookie(&http.Cookie{Name: httpapi.SessionCookie, Value: sa})
		}},
	}
	const (
		tokens   = "reader admin"
		readers  = tokens + " session A session B"
		theAgent = "own proof"
	)
	routes := []struct {
		method, path, id, body string
		ok                     string // the credentials admitted (names, space separated)
	}{
		{"GET", "/v1/calls/" + done.RequestID, done.RequestID, "", tokens + " " + theAgent},
		{"HEAD", "/v1/calls/" + done.RequestID, done.RequestID, "", tokens + " " + theAgent},
		{"GET", "/v1/calls/" + pend.RequestID + "?wait=0s", pend.RequestID, "", tokens + " " + theAgent},
		{"GET", "/approvals/" + pend.ApprovalRequestID, pend.ApprovalRequestID, "", readers + " " + theAgent},
		{"GET", "/approvals/pending", "", "", readers},
		{"GET", "/approvals/batch", "", "", readers},
		{"GET", "/v1/receipts", "", "", readers},
		{"GET", "/v1/receipts/stats", "", "", readers},
		{"GET", "/v1/receipts/" + done.ReceiptID, done.ReceiptID, "", readers},
		{"GET", "/v1/receipts/" + done.ReceiptID + "/proof", done.ReceiptID, "", readers},
		{"GET", "/v1/checkpoints/latest", "", "", readers},
		{"GET", "/v1/checkpoints?size=1", "", "", readers},
		{"GET", "/v1/checkpoints/consistency?from=1&to=1", "", "", readers},
		{"GET", "/v1/export", "", "", readers},
		{"GET", "/metrics", "", "", tokens},
		// Whose session this is: its cookie, and a wrong bearer beside it
		// is refused as on every other route.
		{"GET", "/v1/session", "", "", "session A session B"},
		{"DELETE", "/approvals/batch/b-none", "b-none", "", "admin"},
		{"DELETE", "/approvals/batch?id=b-none", "b-none", "", "admin"},
		{"POST", "/v1/capabilities", "", `{}`, "admin"},
		{"POST", "/v1/capabilities/c-none/revoke", "c-none", "", "admin"},
		// Last: the admin's cancel (with no reason: refused 400) must not
		// end the request the other rows read.
		{"POST", "/approvals/" + pend.ApprovalRequestID + "/cancel", pend.ApprovalRequestID, `{"reason":""}`, "admin"},
		{"POST", "/approvals/" + pend.ApprovalRequestID + "/respond", pend.ApprovalRequestID, `{}`, ""},
	}
	for _, rt := range routes {
		for _, c := range creds {
			req, _ := http.NewRequest(rt.method, f.srv.URL+rt.path, strings.NewReader(rt.body))
			c.set(req, rt.id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			admitted := resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden
			want := strings.Contains(" "+rt.ok+" ", " "+c.name+" ")
			switch {
			case admitted != want:
				t.Errorf("%s %s with %s: %d %s; want admitted=%v", rt.method, rt.path, c.name, resp.StatusCode, b, want)
			case !want && (strings.Contains(string(b), "s3cr3t") || rt.id != "" && strings.Contains(string(b), rt.id)):
				t.Errorf("%s %s with %s: refused with %s, naming what it is about", rt.method, rt.path, c.name, b)
			}
		}
	}
}
