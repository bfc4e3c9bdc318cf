package httpapi_test

import (
	"net/http"
	"testing"
)

// A request that carries an Authorization header is judged by it: a bearer
// token that is wrong is refused (401), and the session cookie beside it
// does not stand in for it (auth.go: the session counts only without an
// Authorization header). GET /v1/session, which reads only the cookie,
// answered such a request with the session (200) while every other route
// refused it: a client whose token is wrong was told it is signed in.
func TestSessionInfoRefusesABadBearer(t *testing.T) {
	f := newApprovalsFixture(t)
	c := newSessionClient(t, f)
	if code, m, _ := c.login(keyAlice, keyAlice.Public().String(), c.challenge()); code != 200 {
		t.Fatalf("login: %d %v", code, m)
	}
	for _, auth := range []string{"Bearer not-the-token", "Basic YWRtaW46YWRtaW4=", "Bearer "} {
		for _, path := range []string{"/approvals/pending", "/v1/session"} {
			req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
			req.Header.Set("Authorization", auth)
			resp, err := c.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with a session cookie and Authorization %q: %d, want 401 (a credential that is wrong is refused, not ignored)",
					path, auth, resp.StatusCode)
			}
		}
	}
	// The cookie alone still answers.
	if code, m, _ := c.do("GET", "/v1/session", ""); code != 200 || m["approver"] != keyAlice.Public().String() {
		t.Fatalf("GET /v1/session with the cookie alone: %d %v", code, m)
	}
}
