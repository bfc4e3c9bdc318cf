package policy_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// typoPolicy is a grant over TOOL of server "pay" listing CATEGORY in
// require_approval_for_actions; TOOLS declares the server's tools.
const typoPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9001"
TOOLS
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

func typoDoc(tools, tool, category string) []byte {
	return []byte(strings.NewReplacer("TOOLS", tools, "TOOL", tool, "CATEGORY", category).Replace(typoPolicy))
}

const (
	refundFinancial = "[[servers.tools]]\nname = \"issue_refund\"\ncategory = \"financial\"\n"
	refundMistyped  = "[[servers.tools]]\nname = \"issue_refund\"\ncategory = \"finacial\"\n"
	refundPayments  = "[[servers.tools]]\nname = \"issue_refund\"\ncategory = \"payments\"\n"
)

// Categories match exactly, so a category misspelt on either side (the
// grant's list or the tool's declaration) would never ask a human: such a
// grant is refused, naming what it was probably meant to say.
func TestMisspeltActionCategoryIsRefused(t *testing.T) {
	cases := []struct {
		name, tools, tool, category, want string
	}{
		{"the grant misspells the tool's category", refundFinancial, "issue_refund", "finacial",
			`category "finacial" never matches tool "issue_refund", whose category is "financial"`},
		{"the grant misspells it, over a pattern", refundFinancial, "issue_*", "finnancial",
			`category "finnancial" never matches tool "issue_refund", whose category is "financial"`},
		{"the tool misspells the listed category", refundMistyped, "issue_refund", "financial",
			`category "financial" never matches tool "issue_refund", whose category is "finacial"`},
		{"no declared tool: a near miss of a well-known category", "", "*", "finacial",
			`category "finacial" is not a well-known category and no tool the grant covers has it: did you mean "financial"?`},
		{"no declared tool: a case variant of a well-known category", "", "*", "Data_Mutation",
			`category "Data_Mutation" is not a well-known category and no tool the grant covers has it: did you mean "data_mutation"?`},
	}
	for _, c := range cases {
		_, err := policy.Parse(typoDoc(c.tools, c.tool, c.category), "typo.toml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v; want it refused with %q", c.name, err, c.want)
		}
	}
}

// Exact matches, well-known categories and custom labels far from every
// known one still load.
func TestActionCategoriesThatCanFireLoad(t *testing.T) {
	cases := []struct{ name, tools, tool, category string }{
		{"exact", refundFinancial, "issue_refund", "financial"},
		{"a custom label the tool declares", refundPayments, "issue_refund", "payments"},
		{"a custom label no declared tool has (agents may declare it)", "", "*", "payments"},
		{"a well-known category no declared tool has", refundPayments, "*", "communication"},
		{"a category a covered tool has exactly, beside a near one (as with case)", refundMistyped +
			"[[servers.tools]]\nname = \"issue_credit\"\ncategory = \"financial\"\n", "issue_*", "financial"},
	}
	for _, c := range cases {
		if _, err := policy.Parse(typoDoc(c.tools, c.tool, c.category), "typo.toml"); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
