package kernel_test

import (
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// Capabilities carry whole seconds. A ttl under a second passed
// IssueCapability's ttl > 0 check, and (issued on a whole second, as a
// fake clock or a lucky real one has it) the capability expired the
// second it was issued: expires_at == issued_at. POST /v1/capabilities
// answered 201 with it, and the kernel refused every call that carried
// it as an invalid capability (its lifetime is not in (0, max]). What
// chio issues it must accept; a ttl it cannot honour is refused at once.
func TestIssuedCapabilityIsOneTheKernelAccepts(t *testing.T) {
	issuer := keys.FromSeed(make([]byte, 32))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	now := time.Unix(1_800_000_000, 0)
	for _, ttl := range []time.Duration{time.Nanosecond, 500 * time.Millisecond, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond} {
		raw, _, err := kernel.IssueCapability(issuer, agent.Public(), []string{"refunds"}, now, ttl)
		if err != nil {
			continue // refused when issued: fine, the operator is told
		}
		if _, _, err := kernel.ParseCapability(raw, issuer.Public()); err != nil {
			t.Errorf("ttl %s: IssueCapability made a capability that the kernel refuses: %v\n%s", ttl, err, raw)
		}
	}
}
