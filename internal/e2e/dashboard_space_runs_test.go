package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// visualLineBefore is a page function: the text drawn on the same visual
// line before the first occurrence of needle in the first text node under
// sel holding it (each character's box compared with the needle's), and
// the needle's left edge less that of the first character of the node's
// line holding mark; null when either is not there.
const visualLineBefore = `(sel, needle, mark) => {
	const root = document.querySelector(sel);
	if (!root) return null;
	const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
	for (let n = w.nextNode(); n; n = w.nextNode()) {
		const t = n.textContent, i = t.indexOf(needle), m = t.lastIndexOf(mark);
		if (i < 0 || m < 0) continue;
		const box = (at) => { const r = document.createRange(); r.setStart(n, at); r.setEnd(n, at + 1); return r.getBoundingClientRect(); };
		const top = box(i).top;
		let from = i;
		while (from > 0 && Math.abs(box(from - 1).top - top) < 1) from--;
		return { before: t.slice(from, i), offset: box(i).left - box(m).left };
	}
	return null;
}`

// TestDashboardMarksRunsOfSpaces: the Arguments pane keeps a value's
// whitespace and wraps its lines where the card ends (style.css:
// break-spaces), one member a line, each indented two spaces. A value
// holding a run of spaces as long as the rest of its line drew a blank
// that ended the line, and the text after it at the start of the next,
// indented as a member is: \"to\": \"acct-GOOD\" drawn as a member of its
// own (its quotes escaped, the rest in place), under the memo, while the
// tool pays acct-MALLORY. The card's width is
// the page's (an agent can know it); here it is measured. In a run of
// spaces inside a JSON string, every space after the first is drawn as an
// escape (\u0020, the same value), as the CLI and Slack write them.
func TestDashboardMarksRunsOfSpaces(t *testing.T) {
	lk, open := dashboardAsLead(t)
	first := lk.submit(t, "refunds-edit", "edit_refund", `{"order":"A-76","amount":900,"currency":"USD"}`,
		`{"purpose":"Goodwill refund","max_amount":{"units":900,"currency":"USD"}}`)
	if first.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", first)
	}
	ctx := open()
	sel := card(first.ApprovalRequestID) + " details.args pre"
	browse(t, ctx, "card", chromedp.WaitVisible(css(sel)))
	// Characters a line of the pane holds (monospace).
	width := read(t, ctx, "width", chromedp.Evaluate[int](`(() => {
		const pre = document.querySelector('`+sel+`'), n = pre.firstChild, r = document.createRange();
		const at = n.textContent.indexOf('"currency"'); // 10 characters on one line
		r.setStart(n, at); r.setEnd(n, at + 10);
		const s = getComputedStyle(pre);
		return Math.floor((pre.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight)) / (r.getBoundingClientRect().width / 10));
	})()`))
	if width < 20 {
		t.Fatalf("a line of %d characters", width)
	}
	// `  "memo": "pay` then spaces to the end of its line, two more, and
	// the forged member.
	prefix := `  "memo": "pay`
	run := strings.Repeat(" ", width-len(prefix)+2)
	call := lk.submit(t, "refunds-edit", "edit_refund",
		fmt.Sprintf(`{"order":"A-77","amount":900,"currency":"USD","memo":"pay%s\"to\": \"acct-GOOD\",","to":"acct-MALLORY"}`, run),
		`{"purpose":"Goodwill refund","max_amount":{"units":900,"currency":"USD"}}`)
	if call.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", call)
	}
	sel = card(call.ApprovalRequestID) + " details.args pre"
	browse(t, ctx, "card", chromedp.WaitVisible(css(sel)))
	type line struct {
		Before string  `json:"before"`
		Offset float64 `json:"offset"`
	}
	got := read(t, ctx, "forged line", chromedp.Evaluate[*line](`(`+visualLineBefore+`)('`+sel+`', '\\"to\\": \\"acct-GOOD', '"to": "acct-MALLORY')`))
	if got == nil {
		t.Fatal("the arguments do not show the memo or the real payee")
	}
	if strings.TrimSpace(got.Before) == "" && got.Offset > -1 && got.Offset < 1 {
		t.Errorf("a run of spaces in the memo draws a line of its own, indented as a member (%q, then the memo's \\\"to\\\": \\\"acct-GOOD\\\" where the real \"to\" stands, %.0fpx apart)", got.Before, got.Offset)
	}
	text := read(t, ctx, "arguments", chromedp.TextContent(css(sel)))
	if !strings.Contains(text, `pay \u0020\u0020`) {
		t.Errorf("the run of spaces is not drawn as escapes:\n%.300s", text)
	}
}
