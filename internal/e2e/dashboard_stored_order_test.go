package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// drawnBefore is a page function: whether the first occurrence of a in the
// text under the element sel is drawn left of the first occurrence of b
// (each measured with a Range over the text nodes, whatever elements
// wrap them), or null when either is not there.
const drawnBefore = `(sel, a, b) => {
	const root = document.querySelector(sel);
	if (!root) return null;
	const left = (needle) => {
		const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
		for (let n = w.nextNode(); n; n = w.nextNode()) {
			const i = n.textContent.indexOf(needle);
			if (i < 0) continue;
			const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + needle.length);
			return r.getBoundingClientRect().left;
		}
		return null;
	};
	const la = left(a), lb = left(b);
	return la === null || lb === null ? null : la < lb;
}`

// TestDashboardDrawsRightToLeftValuesInStoredOrder: with no control
// character at all, the Unicode Bidirectional Algorithm gives numbers that
// follow a Hebrew or Arabic letter the right-to-left direction: the
// argument "שלום 1234 5678" is drawn "5678 1234 םולש", so the approver
// reads the account number with its groups swapped while the tool receives
// 1234 5678. Every value (arguments, a purpose, a confirm's details) is
// measured in the rendered page: 1234 must be drawn left of 5678, and the
// private-use U+E000 (drawn as whatever a font puts there) as \uE000.
func TestDashboardDrawsRightToLeftValuesInStoredOrder(t *testing.T) {
	lk, open := dashboardAsLead(t)
	call := lk.submit(t, "refunds-edit", "edit_refund",
		`{"order":"A-77","amount":900,"currency":"USD","to":"שלום 1234 5678","tag":"x\ue000y"}`,
		`{"purpose":"העברה 4321 8765","max_amount":{"units":900,"currency":"USD"}}`)
	if call.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", call)
	}
	confirm := lk.submit(t, "confirm", "confirm", `{"prompt":"Pay the supplier?","details":{"account":"חשבון 1111 2222"}}`, "")
	if confirm.Status != kernel.StatusPendingApproval {
		t.Fatalf("confirm not parked: %+v", confirm)
	}
	// Arabic-Indic digits alone, with no letter, reorder as well: the
	// space between two groups takes their right-to-left direction.
	digits := lk.submit(t, "confirm", "confirm", `{"prompt":"Pay the supplier?","details":{"ref":"٣٣٣٣ ٤٤٤٤"}}`, "")
	if digits.Status != kernel.StatusPendingApproval {
		t.Fatalf("confirm not parked: %+v", digits)
	}
	ctx := open()
	sel := card(call.ApprovalRequestID)
	csel := card(confirm.ApprovalRequestID)
	dsel := card(digits.ApprovalRequestID)
	browse(t, ctx, "cards", chromedp.WaitVisible(css(sel)), chromedp.WaitVisible(css(csel)), chromedp.WaitVisible(css(dsel)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel+` details.args').open = true`))
	for _, c := range []struct{ what, sel, first, second string }{
		{"the Arguments pane", sel + " details.args pre", "1234", "5678"},
		{"the summary", sel + " h3.summary", "4321", "8765"},
		{"the purpose", sel + " dl.details", "4321", "8765"},
		{"the confirm's details", csel + " .confirm-details", "1111", "2222"},
		{"a confirm's details of Arabic-Indic digits alone", dsel + " .confirm-details", "٣٣٣٣", "٤٤٤٤"},
	} {
		before := read(t, ctx, c.what, chromedp.Evaluate[*bool](`(`+drawnBefore+`)('`+c.sel+`', '`+c.first+`', '`+c.second+`')`))
		if before == nil {
			t.Errorf("%s does not show %s and %s", c.what, c.first, c.second)
		} else if !*before {
			t.Errorf("%s draws %s right of %s: the approver reads the digit groups swapped", c.what, c.first, c.second)
		}
	}
	args := read(t, ctx, "arguments", chromedp.TextContent(css(sel+" details.args pre")))
	if strings.ContainsRune(args, '\ue000') || !strings.Contains(args, `x\uE000y`) || !strings.Contains(args, "שלום 1234 5678") {
		t.Errorf("arguments drawn with a raw private-use character, or the Hebrew not kept: %q", args)
	}
}
