package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// TestDashboardEscapesLookalikeMemberNames: "tо" with a Cyrillic о draws
// exactly as "to", so arguments {"to":"acct-MALLORY","tо":"acct-ALICE"}
// drew two members named "to" and the approver could not tell which the
// tool reads. In a member name holding an ASCII letter and a letter of
// another script than Latin, the dashboard writes every non-ASCII letter as
// an escape (in the Arguments pane and a confirm's details), as the CLI and
// Slack do; a name in one script is drawn as it is.
func TestDashboardEscapesLookalikeMemberNames(t *testing.T) {
	lk, open := dashboardAsLead(t)
	call := lk.submit(t, "refunds-edit", "edit_refund",
		`{"order":"A-77","amount":900,"currency":"USD","to":"acct-MALLORY","t`+"\u043e"+`":"acct-ALICE","сумма":1}`,
		`{"purpose":"refund","max_amount":{"units":900,"currency":"USD"}}`)
	if call.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", call)
	}
	confirm := lk.submit(t, "confirm", "confirm", `{"prompt":"Pay the supplier?","details":{"pаyee":"acct-ALICE"}}`, "")
	if confirm.Status != kernel.StatusPendingApproval {
		t.Fatalf("confirm not parked: %+v", confirm)
	}
	ctx := open()
	sel, csel := card(call.ApprovalRequestID), card(confirm.ApprovalRequestID)
	browse(t, ctx, "cards", chromedp.WaitVisible(css(sel)), chromedp.WaitVisible(css(csel)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel+` details.args').open = true`))
	args := read(t, ctx, "arguments", chromedp.TextContent(css(sel+" details.args pre")))
	if strings.Contains(args, "t\u043e") || !strings.Contains(args, `"t\u043E": "acct-ALICE"`) || !strings.Contains(args, `"сумма"`) {
		t.Errorf("the Arguments pane draws a member name that looks like \"to\" as it is (or escapes a name in one script):\n%s", args)
	}
	details := read(t, ctx, "details", chromedp.TextContent(css(csel+" .confirm-details")))
	if strings.Contains(details, "pаyee") || !strings.Contains(details, `"p\u0430yee"`) {
		t.Errorf("a confirm's details draw a member name that looks like \"payee\" as it is: %q", details)
	}
}
