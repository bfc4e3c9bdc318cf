package httpapi_test

import (
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
)

// GET /v1/session answers {approver, display_name, expires_at} of the
// current session (session.go): a client learns when it must sign in
// again from it, as POST /v1/session told it at sign-in.
func TestSessionInfoSaysWhenItExpires(t *testing.T) {
	f := newApprovalsFixture(t)
	c := newSessionClient(t, f)
	code, m, _ := c.login(keyAlice, keyAlice.Public().String(), c.challenge())
	if code != 200 {
		t.Fatalf("login: %d %v", code, m)
	}
	want := f.clock.Now().Add(httpapi.SessionTTL).Unix()
	f.clock.Advance(time.Hour) // the expiry is the session's, not now + SessionTTL
	code, m, _ = c.do("GET", "/v1/session", "")
	if code != 200 || m["approver"] != keyAlice.Public().String() || m["display_name"] != "Alice" {
		t.Fatalf("GET /v1/session: %d %v", code, m)
	}
	if exp, ok := m["expires_at"].(float64); !ok || int64(exp) != want {
		t.Fatalf("GET /v1/session: expires_at = %v, want %d (the session's expiry): %v", m["expires_at"], want, m)
	}
}
