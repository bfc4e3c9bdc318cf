package policy_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// patternCategoryPolicy declares two "Financial" tools and a grant over
// TOOL (a name or a pattern) listing CATEGORY.
const patternCategoryPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9001"
[[servers.tools]]
name = "issue_refund"
category = "Financial"
[[servers.tools]]
name = "issue_credit"
category = "Financial"
EXTRA
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

func patternCategoryDoc(tool, category, extra string) []byte {
	return []byte(strings.NewReplacer("TOOL", tool, "CATEGORY", category, "EXTRA", extra).Replace(patternCategoryPolicy))
}

// require_approval_for_actions matches categories exactly, so a pattern
// grant ("issue_*", "*") listing "financial" over tools declared only
// "Financial" would never ask a human: refused, as the exact-tool form is,
// naming the declared category.
func TestActionCategoryCaseMismatchOnPatternGrantIsRefused(t *testing.T) {
	for _, tool := range []string{"issue_refund", "issue_*", "*", "issue_[rc]*"} {
		_, err := policy.Parse(patternCategoryDoc(tool, "financial", ""), "cat.toml")
		if err == nil || !strings.Contains(err.Error(), `category "financial" never matches tool "issue_refund", whose category is "Financial"`) {
			t.Errorf("tool = %q: require_approval_for_actions = [\"financial\"] over tools whose category is only "+
				"\"Financial\": err = %v; want it refused, naming \"Financial\"", tool, err)
		}
	}
	// On a builtin server, "*" covers the builtin issue_refund ("financial").
	builtin := strings.NewReplacer(`transport = "http"`, `transport = "builtin"`, `url = "http://127.0.0.1:9001"`, "").
		Replace(string(patternCategoryDoc("*", "FINANCIAL", "")))
	builtin = builtin[:strings.Index(builtin, "[[servers.tools]]")] + builtin[strings.Index(builtin, "[[grants]]"):]
	if _, err := policy.Parse([]byte(builtin), "cat.toml"); err == nil || !strings.Contains(err.Error(), `whose category is "financial"`) {
		t.Errorf("builtin server, tool = \"*\": err = %v; want it refused", err)
	}
}

// A listed category that some covered tool has exactly is kept, even if
// another covered tool differs from it by case; and one that matches no
// covered tool in any case is kept (it may name a category the grant
// reaches through undeclared tools).
func TestActionCategoryOnPatternGrantMatchingExactlyLoads(t *testing.T) {
	lower := "[[servers.tools]]\nname = \"issue_voucher\"\ncategory = \"financial\"\n"
	for _, c := range []struct{ tool, category, extra string }{
		{"*", "financial", lower},
		{"*", "Financial", lower},
		{"issue_*", "Financial", ""},
		{"issue_*", "data_mutation", ""},
		{"issue_credit", "Financial", lower},
	} {
		if _, err := policy.Parse(patternCategoryDoc(c.tool, c.category, c.extra), "cat.toml"); err != nil {
			t.Errorf("tool = %q, category %q: %v", c.tool, c.category, err)
		}
	}
}
