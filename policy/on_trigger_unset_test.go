package policy_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// on_trigger = { GUARD = "require_approval" } routes a guard's deny to a
// human. A grant that routes a guard it does not set (no forbidden_paths,
// no allowed_paths, no max_calls_per_minute, governed_intent_required left
// false) reads "calls that break GUARD ask these approvers", and it also
// counts as the trigger that lets [grants.approval] load; yet the guard
// never fires, so nobody is ever asked and every call runs: the file says
// "no intent → a human decides" while a call without an intent runs
// unasked. Refused at load, as forbidden_paths_case_insensitive without
// forbidden_paths is.
func TestOnTriggerForAGuardTheGrantDoesNotSetIsRefused(t *testing.T) {
	const head = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9001"
[[servers.tools]]
name = "refund"

[[grants]]
id = "refunds"
server = "pay"
tool = "refund"
[grants.constraints]
CONSTRAINTS
[grants.approval]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"
`
	doc := func(constraints string) []byte {
		return []byte(strings.Replace(head, "CONSTRAINTS", constraints, 1))
	}
	for guard, setting := range map[string]string{
		"governed_intent_required": "governed_intent_required = true",
		"forbidden_paths":          `forbidden_paths = ["/etc/**"]`,
		"allowed_paths":            `allowed_paths = ["/srv/**"]`,
		"max_calls_per_minute":     "max_calls_per_minute = 30",
	} {
		route := "on_trigger = { " + guard + ` = "require_approval" }`
		_, err := policy.Parse(doc(route), "unset.toml")
		if err == nil || !strings.Contains(err.Error(), "on_trigger."+guard) || !strings.Contains(err.Error(), "never") {
			t.Errorf("%s routed to a human but not set: err = %v; want it refused (the guard never fires, so nobody is ever asked)", guard, err)
		}
		if _, err := policy.Parse(doc(setting+"\n"+route), "set.toml"); err != nil {
			t.Errorf("%s set and routed to a human: %v", guard, err)
		}
	}
}
