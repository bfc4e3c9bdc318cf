package mcpgw

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// A session token whose expiry is not after its issue time describes no
// lifetime at all: it is malformed, whatever the clock says. Issued a few
// seconds in the future (inside the allowed skew) and expiring before that,
// it used to be accepted until its expiry.
func TestSessionTokenExpiringBeforeItsIssueIsRefused(t *testing.T) {
	w := newGatewayWorld(t)
	now := time.Now()
	aud := w.Kernel.PublicKey()
	token := func(issued, expires time.Time) string {
		raw, err := signed.Sign(w.Agent, SessionSchema, SessionToken{Schema: SessionSchema, Capability: w.CapRaw,
			Audience: aud.String(), IssuedAt: issued.Unix(), ExpiresAt: expires.Unix()})
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	trusted := []keys.PublicKey{aud}
	for name, bearer := range map[string]string{
		"expires before issued": token(now.Add(50*time.Second), now.Add(10*time.Second)),
		"expires when issued":   token(now.Add(30*time.Second), now.Add(30*time.Second)),
	} {
		if _, err := verifySession(bearer, aud, trusted, now); !errors.Is(err, ErrSession) {
			t.Errorf("%s: accepted (err %v)", name, err)
		}
	}
	// The same shape with the interval the right way round is accepted:
	// the refusal above is about the interval, not the rest of the token.
	if _, err := verifySession(token(now.Add(10*time.Second), now.Add(50*time.Second)), aud, trusted, now); err != nil {
		t.Fatalf("a well-formed token was refused: %v", err)
	}
}
