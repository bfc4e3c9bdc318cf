package policy

import (
	"os"
	"strings"
	"testing"
)

// The policy docs/mcp.md shows a platform team is a whole policy: with its
// approver placeholder filled in, it must load as written. (It named the
// "slack" channel without a [channels.slack] table, which Parse refuses.)
func TestMCPHowToPolicyLoads(t *testing.T) {
	doc, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```toml\n")
	snippet, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/mcp.md has no ```toml block")
	}
	// examples/keys/finance-lead.pem's public key, for the doc's "ed25519:…".
	const financeLead = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
	snippet = strings.ReplaceAll(snippet, "ed25519:…", financeLead)
	if _, err := Parse([]byte(snippet), "docs/mcp.md"); err != nil {
		t.Fatalf("the policy in docs/mcp.md does not load: %v", err)
	}
}
