package httpapi_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/httpapi"
)

// Anonymous sign-in attempts with free challenges and a bad key, a bad or
// forged signature, or a key that is no approver are refused and spend
// nothing: they cannot fill the table of spent challenges and lock the
// approvers out. The challenge such an attempt presented still lets its
// real signer in, once.
func TestFailedSignInsSpendNoChallenge(t *testing.T) {
	f := newApprovalsFixture(t)
	const limit = 8
	httpapi.LimitSpentChallenges(f.api, limit)
	c := newSessionClient(t, f)
	alice, bob := keyAlice.Public().String(), keyBob.Public().String()
	mallory := keyMallory.Public().String()
	attempts := []struct {
		what string
		body func(ch string) string
		want int
	}{
		{"no key", func(ch string) string { return loginBody("ed25519:zz", ch, strings.Repeat("00", 64)) }, 400},
		{"no signature", func(ch string) string { return loginBody(alice, ch, "nothex") }, 400},
		{"garbage signature", func(ch string) string { return loginBody(alice, ch, strings.Repeat("00", 64)) }, 401},
		{"Mallory as Alice", func(ch string) string { return loginBody(alice, ch, sessionSig(t, keyMallory, alice, ch)) }, 401},
		{"no approver", func(ch string) string { return loginBody(mallory, ch, sessionSig(t, keyMallory, mallory, ch)) }, 403},
	}
	// Four times the cap, each with a fresh challenge.
	var ch string
	for i := 0; i < 4*limit; i++ {
		a := attempts[i%len(attempts)]
		ch = c.challenge()
		if code, m, _ := c.do("POST", "/v1/session", a.body(ch)); code != a.want {
			t.Fatalf("refused attempt %d (%s): %d %v, want %d (earlier refused attempts filled the spent table?)", i, a.what, code, m, a.want)
		}
		// Presented again, the same challenge is answered the same way.
		if code, _, _ := c.do("POST", "/v1/session", a.body(ch)); code != a.want {
			t.Fatalf("attempt %d (%s) again: %d, want %d", i, a.what, code, a.want)
		}
	}
	if n := httpapi.SpentChallenges(f.api); n != 0 {
		t.Fatalf("%d refused sign-ins left %d spent challenges", 8*limit, n)
	}
	// An approver gets in, with the last challenge, presented twice and
	// refused both times: it lets its real signer in, and only once.
	if code, m, _ := c.login(keyBob, bob, ch); code != 200 {
		t.Fatalf("approver refused after anonymous attempts: %d %v", code, m)
	}
	if code, m, _ := c.login(keyBob, bob, ch); code != 401 {
		t.Fatalf("a signed challenge let a second sign-in in: %d %v", code, m)
	}
	if n := httpapi.SpentChallenges(f.api); n != 1 {
		t.Fatalf("%d spent challenges after one sign-in", n)
	}
}
