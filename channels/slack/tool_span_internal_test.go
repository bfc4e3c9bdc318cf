package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// A tool's name follows the policy's naming rule, which allows a backtick,
// and a glob grant (tool = "*") lets an agent name any tool. The Tool field
// put the name between backticks as it was, so "pay`*to attacker*`" closed
// the code span and Slack drew the rest as mrkdwn (bold here; a link with
// <url|label> is already escaped). Inside the span a backtick is written
// \u0060, as codeBlock writes it in the arguments.
func TestToolNameCannotCloseItsCodeSpan(t *testing.T) {
	req := &approval.Request{ApprovalID: "ar-1", Status: approval.StatusPending, ToolServer: "pay`s",
		ToolName: "refund`*to attacker*`", Quorum: 1}
	blocks, _, _ := (&Channel{}).render(req)
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	// As JSON: the field's line break is \n, each escape's backslash \\.
	const want = "*Tool*\\n`pay\\\\u0060s/refund\\\\u0060*to attacker*\\\\u0060`"
	if !strings.Contains(string(raw), want) {
		t.Fatalf("the tool's name closes its code span; want %s in:\n%s", want, raw)
	}
}
