package slack_test

import (
	"strings"
	"testing"
)

// An argument's member name may mix scripts: "tо" with a Cyrillic о draws
// exactly as "to". Arguments {"to":"acct-MALLORY","tо":"acct-ALICE"}
// drawn raw show two members named "to", and the approver cannot tell
// which one the tool reads (acct-MALLORY). In a member name holding letters
// of more than one script, every non-ASCII letter is written as an escape,
// as the CLI writes it; a name in one script ("сумма") is left as it is.
func TestSlackEscapesLookalikeMemberNames(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":300,"currency":"USD","to":"acct-MALLORY","t`+"\u043e"+`":"acct-ALICE","сумма":1}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	v := w.posted(t, out.ApprovalRequestID)
	var all []string
	for _, b := range blocks(t, v) {
		all = append(all, texts(b)...)
	}
	msg := strings.Join(all, "\n")
	if strings.Contains(msg, "t\u043e") {
		t.Errorf("the message shows a member name that draws as \"to\" but is not:\n%s", msg)
	}
	for _, want := range []string{`"t\u043E":"acct-ALICE"`, `"сумма":1`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not show %s:\n%s", want, msg)
		}
	}
}
