package policy_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// A [grants.approval] table names who decides and how many must agree,
// but only an approval trigger (require_approval_*, or on_trigger routing
// a guard to a human) ever asks them. Without one the file reads "deploys
// need two of these approvers" while every deploy runs with nobody asked:
// refused at load, naming the keys that would ask. A grant over the
// builtin confirm or ask, which always ask a human, needs no trigger.
func TestApprovalWithoutTriggerIsRefused(t *testing.T) {
	const head = `
[[servers]]
id = "deploy-server"
transport = "http"
url = "http://127.0.0.1:9002"
[[servers.tools]]
name = "deploy"
category = "infrastructure"

[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "deploy-prod"
server = "deploy-server"
tool = "deploy"
CONSTRAINTS
[grants.approval]
quorum = 2
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "SRE Lead"
[[grants.approval.approvers]]
public_key = "` + cfoKey + `"
display_name = "Platform Lead"

[[grants]]
id = "ask-a-human"
server = "demo"
tool = "HITL"
[grants.approval]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "SRE Lead"
`
	doc := func(constraints, hitl string) []byte {
		return []byte(strings.NewReplacer("CONSTRAINTS", constraints, "HITL", hitl).Replace(head))
	}
	_, err := policy.Parse(doc("", "confirm"), "deploy.toml")
	if err == nil || !strings.Contains(err.Error(), `grant "deploy-prod" has [grants.approval] but nothing asks for approval`) {
		t.Fatalf("approval table without a trigger: err = %v; want it refused (every deploy would run with nobody asked)", err)
	}
	for _, c := range []struct{ constraints, hitl string }{
		{"[grants.constraints]\nrequire_approval_always = true", "confirm"},
		{"[grants.constraints]\nrequire_approval_first_n = 3", "ask"},
		{"[grants.constraints]\nrequire_approval_when = \"has(args.force)\"", "*"},
		{"[grants.constraints]\nforbidden_paths = [\"/etc/**\"]\non_trigger = { forbidden_paths = \"require_approval\" }", "c*"},
	} {
		if _, err := policy.Parse(doc(c.constraints, c.hitl), "deploy.toml"); err != nil {
			t.Errorf("%q with tool %q: %v", c.constraints, c.hitl, err)
		}
	}
}
