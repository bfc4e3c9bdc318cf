package kernel

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// FuzzParseCapabilitySigned signs capabilities of fuzzed fields with a
// trusted or an untrusted key, so that the fuzzer reaches every check
// behind the signature. ParseCapability accepts exactly those its rules
// allow (schema, id a store can key, 1..MaxCapabilityGrants grants, a
// lifetime in (0, MaxCapabilityTTL], a printable label, a valid subject,
// a trusted issuer that signed it) and returns the capability as signed.
func FuzzParseCapabilitySigned(f *testing.F) {
	trusted := keys.FromSeed(make([]byte, 32))
	other := keys.FromSeed([]byte("other-other-other-other-other-32"))
	subject := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32")).Public().String()
	year := int64(MaxCapabilityTTL / time.Second)
	f.Add("cap-1", "echo", uint16(1), "", int64(1_800_000_000), int64(3600), uint8(0), uint8(0))
	f.Add("cap-2", "refunds", uint16(3), "support-bot", int64(0), year, uint8(0), uint8(1))
	f.Add("cap-3", "x", uint16(1), " padded", int64(5), year+1, uint8(1), uint8(0))
	f.Add("..", "x", uint16(0), "bad\x01", int64(5), int64(0), uint8(0), uint8(2))
	f.Add("cap/4", "x", uint16(MaxCapabilityGrants+1), "", int64(5), int64(-1), uint8(0), uint8(3))
	f.Fuzz(func(t *testing.T, id, grant string, nGrants uint16, label string, issued, lifetime int64, signer, subj uint8) {
		const lim = 1 << 50
		if issued > lim || issued < -lim || lifetime > lim || lifetime < -lim || nGrants > MaxCapabilityGrants+2 {
			return
		}
		key := []keys.PrivateKey{trusted, other}[int(signer)%2]
		c := &Capability{Schema: CapabilitySchema, ID: id, Issuer: key.Public().String(),
			Subject: []string{subject, "", "ed25519:zz", key.Public().String()}[int(subj)%4],
			Label:   label, IssuedAt: issued, ExpiresAt: issued + lifetime}
		for i := 0; i < int(nGrants); i++ {
			c.Grants = append(c.Grants, grant)
		}
		raw, err := signed.Sign(key, CapabilitySchema, c)
		if err != nil {
			return
		}
		var sent Capability
		if err := json.Unmarshal(raw, &sent); err != nil {
			t.Fatal(err)
		}
		_, subjErr := keys.ParsePublicKey(sent.Subject)
		want := len(raw) <= MaxCapabilityBytes && canon.Check(raw) == nil &&
			len(sent.Grants) >= 1 && len(sent.Grants) <= MaxCapabilityGrants &&
			sent.ExpiresAt > sent.IssuedAt && sent.ExpiresAt-sent.IssuedAt <= year &&
			approval.ValidID(sent.ID) && checkLabel(sent.Label) == nil && subjErr == nil &&
			key.Public() == trusted.Public()
		got, sub, err := ParseCapability(raw, trusted.Public())
		if (err == nil) != want {
			t.Fatalf("ParseCapability: %v, the rules say accept=%v\n%s", err, want, raw)
		}
		if err != nil {
			return
		}
		sent.Signature = got.Signature
		if !reflect.DeepEqual(*got, sent) || sub.String() != sent.Subject {
			t.Fatalf("accepted capability differs from the signed one:\n%+v\n%+v", got, sent)
		}
	})
}
