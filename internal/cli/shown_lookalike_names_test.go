package cli_test

import (
	"strings"
	"testing"
)

// TestApprovalViewsEscapeLookalikeMemberNames: an argument's member name
// may mix scripts, "tо" with a Cyrillic о, which draws exactly as "to".
// Arguments {"to":"acct-MALLORY","tо":"acct-ALICE"} printed raw show two
// members named "to", and the approver cannot tell which one the tool
// reads as its "to" (it reads acct-MALLORY). In a member name holding
// letters of more than one script, every non-ASCII letter is written as
// an escape; a name in one script ("сумма", "金額") is left as it is.
func TestApprovalViewsEscapeLookalikeMemberNames(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":450,"currency":"USD","to":"acct-MALLORY","t`+"\u043e"+`":"acct-ALICE","сумма":1,"金額":2}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 {
		t.Fatalf("show: exit %d %s", code, se)
	}
	wo, _, _ := w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	for _, v := range []struct{ what, out string }{{"chio approval show", so}, {"chio approval watch", wo}} {
		if strings.Contains(v.out, "t\u043e") {
			t.Errorf("`%s` prints a member name that draws as \"to\" but is not:\n%s", v.what, v.out)
		}
		for _, want := range []string{`"t\u043e":"acct-ALICE"`, `"сумма":1`, `"金額":2`} {
			if !strings.Contains(v.out, want) {
				t.Errorf("`%s` does not show %s", v.what, want)
			}
		}
	}
}
