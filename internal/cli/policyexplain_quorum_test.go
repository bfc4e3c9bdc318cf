package cli_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// explainQuorumPolicy: deploys need 2 approvals of %s and %s, denied at
// the deadline.
const explainQuorumPolicy = `
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
quorum = 2
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Ops Bot"
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Lead"
`

// When the calling agent is one of a quorum-2 grant's two approvers, only
// one may decide its call: the quorum can never be met, and the kernel
// denies the call (guard approval-policy) instead of parking it. explain
// says so; another agent's call is asked of both.
func TestPolicyExplainDeniesWhenTheQuorumCannotBeMet(t *testing.T) {
	agent, _ := keys.Generate(rand.Reader)
	lead, _ := keys.Generate(rand.Reader)
	pf := filepath.Join(t.TempDir(), "chio.toml")
	if err := os.WriteFile(pf, []byte(fmt.Sprintf(explainQuorumPolicy, agent.Public(), lead.Public())), 0o600); err != nil {
		t.Fatal(err)
	}
	x := explain(t, pf, "--server", "api", "--tool", "deploy", "--subject", agent.Public().String())
	if x.Outcome.Verdict != "deny" || x.Outcome.Guard != "approval-policy" || !strings.Contains(x.Outcome.Reason, "quorum of 2") {
		t.Fatalf("the agent's own call: outcome %+v, want deny by approval-policy, the quorum of 2 unmet", x.Outcome)
	}
	other, _ := keys.Generate(rand.Reader)
	if x := explain(t, pf, "--server", "api", "--tool", "deploy", "--subject", other.Public().String()); x.Outcome.Verdict != "pending_approval" {
		t.Fatalf("another agent's call: outcome %+v", x.Outcome)
	}
}

// explainConfirmQuorumPolicy: a confirm needs 2 approvals of %s and %s;
// the deadline says auto_approve_advisory, which never runs a confirm.
const explainConfirmQuorumPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "confirms"
server = "demo"
tool = "confirm"
[grants.approval]
quorum = 2
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Ops Bot"
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Lead"
`

// A confirm (or ask) is declined at its deadline, whatever the grant's
// timeout_action: the kernel never answers a person's question itself.
// So an auto_approve_advisory deadline does not let a confirm whose quorum
// cannot be met park: the kernel denies it, and explain says so.
func TestPolicyExplainDeniesAConfirmWhoseQuorumCannotBeMetDespiteAdvisory(t *testing.T) {
	agent, _ := keys.Generate(rand.Reader)
	lead, _ := keys.Generate(rand.Reader)
	pf := filepath.Join(t.TempDir(), "chio.toml")
	if err := os.WriteFile(pf, []byte(fmt.Sprintf(explainConfirmQuorumPolicy, agent.Public(), lead.Public())), 0o600); err != nil {
		t.Fatal(err)
	}
	x := explain(t, pf, "--server", "demo", "--tool", "confirm", "--args", `{"prompt":"Ship it?"}`, "--subject", agent.Public().String())
	if x.Outcome.Verdict != "deny" || x.Outcome.Guard != "approval-policy" || !strings.Contains(x.Outcome.Reason, "quorum of 2") {
		t.Fatalf("the agent's own confirm: outcome %+v, want deny by approval-policy, the quorum of 2 unmet", x.Outcome)
	}
}
