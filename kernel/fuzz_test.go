package kernel

import (
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
)

func FuzzParseCapability(f *testing.F) {
	issuer := keys.FromSeed(make([]byte, 32))
	subject := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	good, _, _ := IssueCapability(issuer, subject.Public(), []string{"echo"}, time.Unix(1_800_000_000, 0), time.Hour)
	f.Add(good)
	f.Add([]byte(`{"schema":"chio.capability.v1","id":"x","grants":["a"]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, sub, err := ParseCapability(raw, issuer.Public())
		if err != nil {
			return
		}
		// Anything accepted names the trusted issuer and a valid subject.
		if c.Issuer != issuer.Public().String() || sub.IsZero() || len(c.Grants) == 0 {
			t.Fatalf("accepted %+v", c)
		}
	})
}

func FuzzVerifyProof(f *testing.F) {
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	at := time.Unix(1_800_000_000, 0)
	p, _ := SignProof(agent, "req-1", "cap-1", "demo", "echo", "ph", at)
	f.Add("req-1", "cap-1", "demo", "echo", "ph", p.IssuedAt, p.Signature)
	f.Fuzz(func(t *testing.T, req, capID, server, tool, ph string, issued int64, sig string) {
		err := VerifyProof(agent.Public(), Proof{IssuedAt: issued, Signature: sig}, req, capID, server, tool, ph, at)
		if err == nil && (req != "req-1" || capID != "cap-1" || server != "demo" || tool != "echo" || ph != "ph") {
			t.Fatalf("proof verified for other content: %q %q %q %q %q", req, capID, server, tool, ph)
		}
	})
}
