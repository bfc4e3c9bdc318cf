package policy_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// Settings that would load and then silently do nothing (or less than the
// file shows) are refused at load.

const financeLeadKey = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
const cfoKey = "ed25519:264f3c00fa147d83e3a89432b2385a42a28b76f2f685838a111c86d28d5d7588"

const escalationPolicy = `
[[servers]]
id = "s"
transport = "builtin"

[[grants]]
id = "refunds"
server = "s"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 3600
TIMEOUT_ACTION
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "` + cfoKey + `"
display_name = "CFO"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["Finance Lead"]
timeout_seconds = 900
[[grants.approval.escalation.tiers]]
approvers = ["CFO"]
timeout_seconds = 3600
`

// An escalation table whose grant does not set timeout_action = "escalate"
// would be ignored (the kernel reads tiers only when escalating): the file
// says "tier 1: Finance Lead, 15 minutes; tier 2: CFO", but every approver,
// the CFO too, would be trusted from the first second, standing approvals
// would follow every approver, and terminal_action would never apply. It
// silently widens who may approve, so it is an error.
func TestEscalationWithoutEscalateTimeoutActionIsRefused(t *testing.T) {
	for _, action := range []string{``, `timeout_action = "deny"`, `timeout_action = "auto_approve_advisory"`} {
		doc := strings.Replace(escalationPolicy, "TIMEOUT_ACTION", action, 1)
		_, err := policy.Parse([]byte(doc), "esc.toml")
		if err == nil || !strings.Contains(err.Error(), `escalation tiers apply only with timeout_action = "escalate"`) {
			t.Fatalf("%q with escalation tiers: err = %v; want it refused (every approver, the tier-2-only CFO included, would decide from the start)", action, err)
		}
	}
	doc := strings.Replace(escalationPolicy, "TIMEOUT_ACTION", `timeout_action = "escalate"`, 1)
	if _, err := policy.Parse([]byte(doc), "esc.toml"); err != nil {
		t.Fatalf("escalating policy: %v", err)
	}
}

const categoryPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9001"
[[servers.tools]]
name = "issue_refund"
category = "Financial"
[[servers.tools]]
name = "send_receipt"
category = "financial"

[[grants]]
id = "refunds"
server = "pay"
tool = "TOOL"
[grants.constraints]
require_approval_for_actions = ["CATEGORY"]
[grants.approval]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"
`

// require_approval_for_actions matches a tool's category exactly
// ("financial" != "Financial"). On a grant for one declared tool, a listed
// category that differs from the tool's only by case could never ask a
// human for it: refused, naming the declared category.
func TestActionCategoryDifferingOnlyInCaseIsRefused(t *testing.T) {
	doc := func(tool, category string) []byte {
		return []byte(strings.NewReplacer("TOOL", tool, "CATEGORY", category).Replace(categoryPolicy))
	}
	_, err := policy.Parse(doc("issue_refund", "financial"), "cat.toml")
	if err == nil || !strings.Contains(err.Error(), `category "financial" never matches tool "issue_refund", whose category is "Financial"`) ||
		!strings.Contains(err.Error(), "case-sensitive") {
		t.Fatalf("require_approval_for_actions = [\"financial\"] over a tool of category \"Financial\": err = %v; want it refused", err)
	}
	// The builtin issue_refund's category is "financial".
	builtin := strings.Replace(strings.Replace(string(doc("issue_refund", "FINANCIAL")), `transport = "http"`, `transport = "builtin"`, 1),
		`url = "http://127.0.0.1:9001"`, "", 1)
	builtin = builtin[:strings.Index(builtin, "[[servers.tools]]")] + builtin[strings.Index(builtin, "[[grants]]"):]
	if _, err := policy.Parse([]byte(builtin), "cat.toml"); err == nil || !strings.Contains(err.Error(), `whose category is "financial"`) {
		t.Fatalf("builtin tool: err = %v", err)
	}
	for _, c := range []struct{ tool, category string }{
		{"issue_refund", "Financial"}, // exact
		{"issue_refund", "communication"},
		{"*", "financial"}, // a pattern: matches send_receipt exactly
	} {
		if _, err := policy.Parse(doc(c.tool, c.category), "cat.toml"); err != nil {
			t.Errorf("tool %q, category %q: %v", c.tool, c.category, err)
		}
	}
}
