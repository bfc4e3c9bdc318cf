package cli_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// explainSelfOnlyPolicy: one grant asking a human, whose one approver is
// %s, the calling agent's key in the test.
const explainSelfOnlyPolicy = `
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
public_key = "%s"
display_name = "Ops Bot"
`

// When every approver is the calling agent, nobody may decide its request
// and the kernel denies the call (guard approval-policy) instead of
// parking it: explain says so, as it says what the kernel does.
func TestPolicyExplainDeniesWhenOnlyTheAgentWouldApprove(t *testing.T) {
	agent, err := keys.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(t.TempDir(), "chio.toml")
	if err := os.WriteFile(pf, []byte(fmt.Sprintf(explainSelfOnlyPolicy, agent.Public())), 0o600); err != nil {
		t.Fatal(err)
	}
	x := explain(t, pf, "--server", "api", "--tool", "deploy", "--subject", agent.Public().String())
	if x.Outcome.Verdict != "deny" || x.Outcome.Guard != "approval-policy" {
		t.Fatalf("the agent's own call: outcome %+v, want deny by approval-policy", x.Outcome)
	}
	// Another agent's call is asked of the Ops Bot.
	other, _ := keys.Generate(rand.Reader)
	if x := explain(t, pf, "--server", "api", "--tool", "deploy", "--subject", other.Public().String()); x.Outcome.Verdict != "pending_approval" {
		t.Fatalf("another agent's call: outcome %+v", x.Outcome)
	}
}
