package kernel_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/kernel"
)

// chio issues capabilities for at most MaxCapabilityTTL, but one signed
// by an authority key (another issuer's tooling) was accepted for any
// lifetime: a capability good for a century is, in practice, one that is
// never renewed, so a leaked agent key keeps its grants until someone
// revokes it by id. The same cap holds for every issuer.
func TestAuthorityCapabilityLifetimeIsCapped(t *testing.T) {
	authority := keys.FromSeed([]byte("authority-authority-authority-32"))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	now := time.Unix(1_800_000_000, 0)
	sign := func(life time.Duration) []byte {
		c := &kernel.Capability{Schema: kernel.CapabilitySchema, ID: "cap-authority-1", Issuer: authority.Public().String(),
			Subject: agent.Public().String(), Grants: []string{"refunds"}, IssuedAt: now.Unix(), ExpiresAt: now.Add(life).Unix()}
		raw, err := signed.Sign(authority, kernel.CapabilitySchema, c)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	if _, _, err := kernel.ParseCapability(sign(kernel.MaxCapabilityTTL), authority.Public()); err != nil {
		t.Fatalf("a capability for the longest lifetime chio issues: %v", err)
	}
	_, _, err := kernel.ParseCapability(sign(100*365*24*time.Hour), authority.Public())
	if !errors.Is(err, kernel.ErrCapabilityInvalid) {
		t.Fatalf("a capability valid for 100 years was accepted (err %v), want ErrCapabilityInvalid", err)
	}
	_, _, err = kernel.ParseCapability(sign(-time.Hour), authority.Public())
	if !errors.Is(err, kernel.ErrCapabilityInvalid) {
		t.Fatalf("a capability that expires before it is issued: err %v, want ErrCapabilityInvalid", err)
	}
}
