package cli_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
)

// explainApproversPolicy: one grant asking a human, with two approvers;
// %[1]s is also the calling agent's key in the test.
const explainApproversPolicy = `
[[servers]]
id = "api"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "deploy"

[[grants]]
id = "deploys"
server = "api"
tool = "deploy"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Ops Bot"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "SRE Lead"
`

// The kernel never counts the calling agent's own vote
// (kernel/approvers.go). explain listed the agent among those its request
// asks, so a policy whose only approver besides the agent is away read as
// one two people can decide.
func TestPolicyExplainAsksOnlyWhoseVoteCounts(t *testing.T) {
	var k [2]keys.PrivateKey
	for i := range k {
		var err error
		if k[i], err = keys.Generate(rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	pf := filepath.Join(t.TempDir(), "chio.toml")
	text := fmt.Sprintf(explainApproversPolicy, k[0].Public(), k[1].Public())
	if err := os.WriteFile(pf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	x := explain(t, pf, "--server", "api", "--tool", "deploy", "--subject", k[0].Public().String())
	if x.Outcome.Verdict != "pending_approval" || x.Approval == nil {
		t.Fatalf("outcome %+v", x.Outcome)
	}
	if !slices.Equal(x.Approval.Approvers, []string{"SRE Lead"}) {
		t.Fatalf("asks %q; the kernel counts only SRE Lead's vote (Ops Bot is the agent)", x.Approval.Approvers)
	}
	x = explain(t, pf, "--server", "api", "--tool", "deploy", "--subject", k[1].Public().String())
	if !slices.Equal(x.Approval.Approvers, []string{"Ops Bot"}) {
		t.Fatalf("asks %q for the SRE Lead's own call", x.Approval.Approvers)
	}
	// The table says who is left out and why.
	so, se, code := chio(nil, "policy", "explain", pf, "--server", "api", "--tool", "deploy", "--subject", k[0].Public().String())
	if code != cli.ExitOK || !strings.Contains(so, "asks:     SRE Lead (quorum 1)") || !strings.Contains(so, "uncounted: Ops Bot (the calling agent") {
		t.Fatalf("exit %d\n%s%s", code, so, se)
	}
}
