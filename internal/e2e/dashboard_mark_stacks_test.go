package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// TestDashboardShowsStackedCombiningMarks: a letter followed by hundreds
// of combining marks (U+0301 COMBINING ACUTE ACCENT, 300 times) is drawn
// as one character, the marks piled on it or off the card, while the tool
// gets every one of them: "acct-1" plus 300 code points the approver
// cannot count, or tell from "acct-1" with two. The card must show that
// they are there: a run of more combining marks than a script stacks
// (or one mark repeated, which draws as one) is written as \uXXXX
// escapes, as invisible characters are, in every text the card draws:
// here the arguments, the purpose and the Amend box (where the escape,
// inside a JSON string, is the same value).
func TestDashboardShowsStackedCombiningMarks(t *testing.T) {
	lk, open := dashboardAsLead(t)
	stack := strings.Repeat(`\u0301`, 300)
	out := lk.submit(t, "refunds-edit", "edit_refund",
		`{"order":"A-81","amount":900,"currency":"USD","to":"acct-1`+stack+`","ref":"e\u0301\u0301"}`,
		`{"purpose":"Goodwill refund`+stack+`","max_amount":{"units":900,"currency":"USD"}}`)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", out)
	}
	ctx := open()
	sel := card(out.ApprovalRequestID)
	browse(t, ctx, "card", chromedp.WaitVisible(css(sel)), press(sel+` button[data-action="amend"]`))
	hidden := read(t, ctx, "drawn text", chromedp.Evaluate[[]string](`(() => {
		const c = document.querySelector('`+sel+`');
		const texts = {card: c.innerText, amend: c.querySelector('.amend-args').value};
		const out = [];
		for (const [where, s] of Object.entries(texts)) {
			for (const m of s.matchAll(/\p{M}{2,}/gu)) {
				const run = Array.from(m[0]);
				if (run.length > 4 || run.some((x, i) => i > 0 && x === run[i - 1])) out.push(where + ': ' + run.length + ' marks drawn after ' + JSON.stringify(s.slice(Math.max(0, m.index - 12), m.index)));
			}
		}
		let amended;
		try { amended = JSON.parse(texts.amend); } catch (e) { out.push('the Amend box does not parse: ' + e.message); }
		if (amended && amended.to !== 'acct-1' + '\u0301'.repeat(300)) out.push('the Amend box reads as another value: ' + JSON.stringify(amended.to).slice(0, 40));
		if (!texts.card.includes('\\u0301')) out.push('the card does not write the marks as escapes');
		return out;
	})()`))
	if len(hidden) > 0 {
		t.Errorf("stacked combining marks drawn as one character: %q", hidden)
	}
}
