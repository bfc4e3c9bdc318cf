package mcpgw

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/kernel"
)

// FuzzVerifySession: the /mcp bearer check accepts a session token exactly
// when it is this kernel's (audience), within its lifetime rules (issued
// at most MaxSkew ahead, not expired, at most MaxSessionTTL long), carries
// a capability a trusted key signed that is valid now, and is signed by
// that capability's subject; the agent it returns is that subject and
// capability. The fuzzer chooses the times, the signer, the audience and
// the capability, and raw bearers (edits of a good one).
func FuzzVerifySession(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	kern := keys.FromSeed([]byte("kernel-kernel-kernel-kernel-ker-"))
	authority := keys.FromSeed([]byte("authority-authority-authority-au"))
	stranger := keys.FromSeed([]byte("stranger-stranger-stranger-stran"))
	agentK := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	trusted := []keys.PublicKey{kern.Public(), authority.Public()}
	caps := make([][]byte, 0, 5)
	for _, c := range []struct {
		issuer keys.PrivateKey
		at     time.Time
		ttl    time.Duration
	}{
		{kern, now, time.Hour}, {authority, now.Add(-time.Hour), 2 * time.Hour},
		{stranger, now, time.Hour}, {kern, now.Add(-2 * time.Hour), time.Hour}, {kern, now.Add(5 * time.Minute), time.Hour},
	} {
		raw, _, err := kernel.IssueCapability(c.issuer, agentK.Public(), []string{"echo"}, c.at, c.ttl)
		if err != nil {
			f.Fatal(err)
		}
		caps = append(caps, raw)
	}
	good, err := SignSession(agentK, caps[0], kern.Public().String(), now, time.Minute)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(int64(0), int64(60), uint8(0), uint8(0), uint8(0), "")
	f.Add(int64(61), int64(60), uint8(0), uint8(0), uint8(1), "")
	f.Add(int64(-3600), int64(3601), uint8(0), uint8(0), uint8(0), "")
	f.Add(int64(-60), int64(60), uint8(0), uint8(1), uint8(2), "")
	f.Add(int64(0), int64(60), uint8(1), uint8(2), uint8(3), "")
	f.Add(int64(0), int64(60), uint8(0), uint8(0), uint8(4), "")
	f.Add(int64(0), int64(0), uint8(0), uint8(0), uint8(0), good)
	f.Add(int64(0), int64(0), uint8(0), uint8(0), uint8(0), good+"A")
	f.Add(int64(0), int64(0), uint8(0), uint8(0), uint8(0), good[:len(good)-1])
	f.Fuzz(func(t *testing.T, issuedOff, lifetime int64, signer, audience, capIdx uint8, raw string) {
		if raw != "" {
			a, err := verifySession(raw, kern.Public(), trusted, now)
			if err == nil && a.subject != agentK.Public() {
				t.Fatalf("accepted a session for %s", a.subject)
			}
			return
		}
		const lim = 1 << 40
		if issuedOff > lim || issuedOff < -lim || lifetime > lim || lifetime < -lim {
			return
		}
		key := []keys.PrivateKey{agentK, stranger}[int(signer)%2]
		aud := []string{kern.Public().String(), authority.Public().String(), ""}[int(audience)%3]
		capRaw := caps[int(capIdx)%len(caps)]
		tok := SessionToken{Schema: SessionSchema, Capability: capRaw, Audience: aud,
			IssuedAt: now.Unix() + issuedOff}
		tok.ExpiresAt = tok.IssuedAt + lifetime
		sig, err := signed.Sign(key, SessionSchema, tok)
		if err != nil {
			t.Fatal(err)
		}
		bearer := base64.RawURLEncoding.EncodeToString(sig)
		c, subject, cerr := kernel.ParseCapability(capRaw, trusted...)
		nowU := now.Unix()
		want := len(bearer) <= MaxSessionTokenBytes && aud == kern.Public().String() &&
			tok.IssuedAt <= nowU+int64(MaxSkew/time.Second) && nowU < tok.ExpiresAt &&
			tok.ExpiresAt-tok.IssuedAt <= int64(MaxSessionTTL/time.Second) &&
			cerr == nil && c.CheckTime(now) == nil && subject == key.Public()
		a, err := verifySession(bearer, kern.Public(), trusted, now)
		if (err == nil) != want {
			t.Fatalf("verifySession: %v, the rules say accept=%v (token %+v)", err, want, tok)
		}
		if err != nil {
			return
		}
		if a.subject != key.Public() || a.cap.ID != c.ID || string(a.capRaw) != string(capRaw) || a.expires.Unix() != tok.ExpiresAt {
			t.Fatalf("accepted session speaks for %s / %s, signed by %s for %s", a.subject, a.cap.ID, key.Public(), c.ID)
		}
	})
}
