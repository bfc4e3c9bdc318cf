package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/device"

	"github.com/chiokernel/chio/kernel"
)

// unshownText is a page function: the text under the element sel that is
// not drawn where the approver can read it, as the card first appears
// (text in a hidden element, such as the closed Amend box, or in a
// textarea is left out). A text is unshown when it is not drawn at all
// (inside a closed <details>, say), or when any of its line boxes lies
// outside an ancestor, up to the card, that clips what overflows it
// (overflow other than visible: hidden cuts it off; auto or scroll hides
// it until scrolled, and an overlay scroll bar, as macOS and phones draw
// them, is not drawn until then), or outside the card itself. Each entry
// is the start of the text.
const unshownText = `(sel) => {
	const root = document.querySelector(sel);
	if (!root) return ['no element ' + sel];
	const box = (e) => {
		const r = e.getBoundingClientRect();
		const left = r.left + e.clientLeft, top = r.top + e.clientTop;
		return { left, top, right: left + e.clientWidth, bottom: top + e.clientHeight };
	};
	const out = [];
	const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
	for (let n = w.nextNode(); n; n = w.nextNode()) {
		if (!n.textContent.trim() || n.parentElement.closest('[hidden], textarea')) continue;
		const clips = [];
		for (let e = n.parentElement; e; e = e.parentElement) {
			const s = getComputedStyle(e);
			if (e === root || s.overflowX !== 'visible' || s.overflowY !== 'visible') clips.push(box(e));
			if (e === root) break;
		}
		const r = document.createRange();
		r.selectNodeContents(n);
		const lines = Array.from(r.getClientRects());
		const drawn = lines.length > 0 && n.parentElement.checkVisibility({ contentVisibilityAuto: true, visibilityProperty: true, opacityProperty: true });
		const cut = !drawn || lines.some((l) => l.width > 0 && clips.some((c) =>
			l.left < c.left - 1 || l.right > c.right + 1 || l.top < c.top - 1 || l.bottom > c.bottom + 1));
		if (cut) out.push(n.textContent.slice(0, 80));
	}
	return out;
}`

// TestDashboardShowsTheWholeRequest: everything a card holds is drawn where
// the approver reads it, however long its words, on a desktop window and
// on a phone. A card clips what overflows it, and the Arguments pane
// scrolled sideways: so a long unbroken memo in the arguments pushed the
// rest of its line (the account the tool pays) out of sight, a confirm's
// details given as a long string or under a long member name were cut at
// the card's edge with the value they name, and a long unbroken word in a
// confirm's prompt cut off the rest of it, while Approve and Confirm
// signed for all of it. And the Arguments pane was closed: Approve signed
// for arguments the card did not draw until a click. Every such request is
// one the kernel accepts.
func TestDashboardShowsTheWholeRequest(t *testing.T) {
	lk, open := dashboardAsLead(t)
	long := strings.Repeat("x", 400)
	submit := func(grant, tool, args, intent string) string {
		t.Helper()
		out := lk.submit(t, grant, tool, args, intent)
		if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("not parked: %+v", out)
		}
		return out.ApprovalRequestID
	}
	cases := []struct{ what, id string }{
		{"arguments with a long memo before the payee", submit("refunds-edit", "edit_refund",
			fmt.Sprintf(`{"order":"A-77","amount":900,"currency":"USD","memo":"%s then pay acct-MALLORY-0xdead"}`, long),
			`{"purpose":"Goodwill refund","max_amount":{"units":900,"currency":"USD"}}`)},
		{"a purpose holding a long word", submit("refunds-edit", "edit_refund", `{"order":"A-78","amount":900,"currency":"USD"}`,
			fmt.Sprintf(`{"purpose":"Goodwill refund %s to acct-MALLORY-0xdead","max_amount":{"units":900,"currency":"USD"}}`, long))},
		{"a confirm's details as one long string", submit("confirm", "confirm",
			fmt.Sprintf(`{"prompt":"Pay the supplier?","details":"%s then pay acct-MALLORY-0xdead"}`, long), "")},
		{"a confirm's details under a long member name", submit("confirm", "confirm",
			fmt.Sprintf(`{"prompt":"Pay the supplier?","details":{"%s":"acct-MALLORY-0xdead"}}`, long), "")},
		{"a confirm's prompt holding a long word", submit("confirm", "confirm",
			fmt.Sprintf(`{"prompt":"Pay the supplier %s at acct-MALLORY-0xdead?"}`, long), "")},
		{"a question and an option holding a long word", submit("ask", "ask",
			fmt.Sprintf(`{"prompt":"Which account?","questions":[{"id":"to","text":"Pay %s to?","type":"single","options":["acct-1 %s acct-MALLORY","acct-2"]}]}`, long, long), "")},
		{"arguments nested deep", submit("refunds-edit", "edit_refund",
			`{"order":"A-79","amount":900,"currency":"USD","ref":`+strings.Repeat(`{"a":`, 40)+`"acct-MALLORY-0xdead"`+strings.Repeat("}", 40)+`}`,
			`{"purpose":"Goodwill refund","max_amount":{"units":900,"currency":"USD"}}`)},
	}
	ctx := open()
	for _, view := range []struct {
		name   string
		layout chromedp.Action[chromedp.Void]
	}{
		{"a 1280-pixel window", chromedp.EmulateViewport(1280, 900)},
		{"a phone", chromedp.Emulate(device.IPhone13)},
	} {
		browse(t, ctx, view.name, view.layout)
		for _, c := range cases {
			sel := card(c.id)
			browse(t, ctx, c.what, chromedp.WaitVisible(css(sel)))
			// Measured until the card shows all it holds, for up to 3 s: a
			// card measured while the page still lays it out (just after
			// the viewport changed, on a loaded machine) reads as cut
			// whole; a card that cuts its text does so every time.
			var cut []string
			for end := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				cut = read(t, ctx, c.what, chromedp.Evaluate[[]string](`(`+unshownText+`)('`+sel+`')`))
				if len(cut) == 0 || time.Now().After(end) {
					break
				}
			}
			if len(cut) > 0 {
				t.Errorf("on %s, the card for %s does not show all it holds; cut: %q", view.name, c.what, cut)
			}
		}
	}
}

// TestDashboardConfirmDetailsShowWhitespace: a confirm's details are what
// the agent acts on, so each value is drawn so that it reads back as
// exactly that value. They were drawn as prose, and HTML collapses
// whitespace: " acct-1" read "acct-1", "A  B" read "A B", and "line 1\n
// line 2" read "line 1 line 2", so two different confirmations looked
// the same. Each value's drawn text (innerText, what the approver reads)
// must now parse as JSON to the value itself.
func TestDashboardConfirmDetailsShowWhitespace(t *testing.T) {
	lk, open := dashboardAsLead(t)
	out := lk.submit(t, "confirm", "confirm",
		`{"prompt":"Pay the supplier?","details":{"to":" acct-1","ref":"A  B","memo":"line 1\nline 2","tab":"a\tb","n":12.5,"ok":true,"list":["x  y"]}}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", out)
	}
	ctx := open()
	sel := card(out.ApprovalRequestID)
	browse(t, ctx, "card", chromedp.WaitVisible(css(sel)))
	misread := read(t, ctx, "details", chromedp.Evaluate[[]string](`(() => {
		const want = {to: ' acct-1', ref: 'A  B', memo: 'line 1\nline 2', tab: 'a\tb', n: 12.5, ok: true, list: ['x  y']};
		const out = [];
		for (const dt of document.querySelectorAll('`+sel+` .confirm-details dt')) {
			const drawn = dt.nextElementSibling.innerText;
			let v;
			try { v = JSON.parse(drawn); } catch { v = undefined; }
			let name;
			try { name = JSON.parse(dt.innerText); } catch { name = dt.innerText; }
			if (JSON.stringify(v) !== JSON.stringify(want[name])) out.push(dt.innerText + ' drawn as ' + JSON.stringify(drawn));
		}
		return out;
	})()`))
	if len(misread) > 0 {
		t.Errorf("confirm details drawn so that they read as other values: %q", misread)
	}
}

// A confirm's detail names were drawn as prose: "amount" and "amount "
// (or " to" and "to") read the same, so an agent could show an approver two
// details that look alike and act on the one they did not read. Names are
// drawn as JSON strings, as the values are; each must read as itself.
func TestDashboardConfirmDetailNamesAreDistinct(t *testing.T) {
	lk, open := dashboardAsLead(t)
	out := lk.submit(t, "confirm", "confirm",
		`{"prompt":"Pay the supplier?","details":{"amount":5,"amount ":5000,"to":"acct-1"," to":"acct-2","a  b":1,"a b":2}}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", out)
	}
	ctx := open()
	sel := card(out.ApprovalRequestID)
	browse(t, ctx, "card", chromedp.WaitVisible(css(sel)))
	misread := read(t, ctx, "detail names", chromedp.Evaluate[[]string](`(() => {
		const want = ['amount', 'amount ', 'to', ' to', 'a  b', 'a b'];
		const drawn = [...document.querySelectorAll('`+sel+` .confirm-details dt')].map(dt => dt.innerText);
		const out = [];
		for (const name of want) {
			const as = drawn.filter(d => { try { return JSON.parse(d) === name; } catch { return false; } });
			if (as.length !== 1) out.push(JSON.stringify(name) + ' is read ' + as.length + ' times in ' + JSON.stringify(drawn));
		}
		return out;
	})()`))
	if len(misread) > 0 {
		t.Errorf("confirm detail names drawn so that they do not read as themselves: %q", misread)
	}
}
