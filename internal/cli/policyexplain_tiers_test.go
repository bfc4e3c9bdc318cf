package cli_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
)

// explainTiersPolicy: deploys escalate from tier 1, Ops Bot (%[1]s, also
// the calling agent's key in the test), to tier 2, SRE Lead (%[2]s).
const explainTiersPolicy = explainApproversPolicy + `timeout_action = "escalate"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["Ops Bot"]
timeout_seconds = 600
[[grants.approval.escalation.tiers]]
approvers = ["SRE Lead"]
timeout_seconds = 3600
`

// The kernel passes over an escalation tier in which nobody but the
// calling agent may vote, to the next tier with someone
// (kernel/skip_tiers.go): explain predicts that, not a denial, and says
// which tier the request waits at and which it passed over.
func TestPolicyExplainPassesOverTheAgentsOwnTier(t *testing.T) {
	var k [2]keys.PrivateKey
	for i := range k {
		var err error
		if k[i], err = keys.Generate(rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	pf := filepath.Join(t.TempDir(), "chio.toml")
	// timeout_action belongs to [grants.approval]: put it before its approvers.
	text := strings.Replace(fmt.Sprintf(explainTiersPolicy, k[0].Public(), k[1].Public()), "timeout_action = \"escalate\"\n", "", 1)
	text = strings.Replace(text, "[grants.approval]\n", "[grants.approval]\ntimeout_action = \"escalate\"\n", 1)
	if err := os.WriteFile(pf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"policy", "explain", pf, "--server", "api", "--tool", "deploy", "--subject", k[0].Public().String()}
	so, se, code := chio(nil, append(args, "--output", "json")...)
	var x struct {
		Outcome struct {
			Verdict string `json:"verdict"`
			Reason  string `json:"reason"`
		} `json:"outcome"`
		Approval *struct {
			Approvers      []string `json:"approvers"`
			TimeoutSeconds int      `json:"timeout_seconds"`
			SkippedTiers   []int    `json:"skipped_tiers"`
		} `json:"approval"`
	}
	if code != cli.ExitOK || json.Unmarshal([]byte(so), &x) != nil {
		t.Fatalf("exit %d\n%s%s", code, so, se)
	}
	if x.Outcome.Verdict != "pending_approval" || x.Approval == nil {
		t.Fatalf("outcome %s (%s), want pending_approval at tier 2 (SRE Lead)", x.Outcome.Verdict, x.Outcome.Reason)
	}
	if !slices.Equal(x.Approval.Approvers, []string{"SRE Lead"}) || x.Approval.TimeoutSeconds != 3600 || !slices.Equal(x.Approval.SkippedTiers, []int{0}) {
		t.Fatalf("asks %q for %ds, skipped tiers %v; want SRE Lead for tier 2's 3600 s, tier 1 passed over", x.Approval.Approvers, x.Approval.TimeoutSeconds, x.Approval.SkippedTiers)
	}
	so, se, code = chio(nil, args...)
	if code != cli.ExitOK || !strings.Contains(so, "asks:     SRE Lead (quorum 1)") || !strings.Contains(so, "(tier 2 of 2)") || !strings.Contains(so, "escalated at once past tier 1") {
		t.Fatalf("exit %d\n%s%s", code, so, se)
	}
}
