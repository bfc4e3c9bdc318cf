package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardCardsHoldStillUnderThePointer: a card removed from the list
// (its request decided elsewhere, cancelled by its agent, expired) moved
// every card below it up at once, and one inserted above (an older request
// arriving late) moved them down: the button under the approver's pointer
// became another card's, and the click aimed at one request approved the
// next. While the pointer is over the list, cards hold still: a resolved
// card stays in place, greyed, its controls disabled, saying it is no
// longer pending, and a new one is placed below the others; when the
// pointer leaves the list, the resolved card goes and the order is
// restored.
func TestDashboardCardsHoldStillUnderThePointer(t *testing.T) {
	_, open := dashboardAsLead(t)
	ctx := open()
	add := addPendingCard
	a, b := card("ar-hold-a"), card("ar-hold-b")
	browse(t, ctx, "two cards",
		// Both cards in view, the page at its top (where the browser's
		// scroll anchoring does not hold what is in view steady).
		chromedp.EmulateViewport(1280, 2400),
		chromedp.Evaluate[chromedp.Void](`(`+add+`)('ar-hold-a', 1700000000)`),
		chromedp.Evaluate[chromedp.Void](`(`+add+`)('ar-hold-b', 1700000002)`),
		chromedp.WaitVisible(css(b+` button[data-action="approve"]`)),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`),
		// The cards' entry animations (which move them) have ended.
		chromedp.Evaluate[chromedp.Void](`Promise.allSettled([...document.querySelectorAll('#cards article')].flatMap((c) => c.getAnimations()).map((a) => a.finished))`, chromedp.EvalAwaitPromise),
	)
	type box struct{ X, Y float64 }
	approveB := `(() => { const r = document.querySelector('` + b + ` button[data-action="approve"]').getBoundingClientRect();
		return {X: r.x + r.width / 2, Y: r.y + r.height / 2}; })()`
	at := read(t, ctx, "B's Approve", chromedp.Evaluate[box](approveB))
	browse(t, ctx, "pointer on B's Approve, A resolved elsewhere",
		chromedp.MouseEvent(chromedp.MouseMoved, at.X, at.Y),
		chromedp.Evaluate[chromedp.Void](`removeCard('ar-hold-a')`),
		// A is gone from the page, or held in it: settled either way.
		chromedp.Evaluate[chromedp.Void](`new Promise((done) => { const settled = () => {
			const c = document.querySelector('`+a+`');
			if (!c || c.classList.contains('gone')) done(); else setTimeout(settled, 20); }; settled(); })`, chromedp.EvalAwaitPromise),
	)
	if now := read(t, ctx, "B's Approve after A", chromedp.Evaluate[box](approveB)); now != at {
		t.Fatalf("A's removal moved B's Approve from %v to %v under the pointer: the click aimed at it lands elsewhere", at, now)
	}
	browse(t, ctx, "an older request arrives",
		chromedp.Evaluate[chromedp.Void](`(`+add+`)('ar-hold-c', 1700000001)`),
		chromedp.WaitVisible(css(card("ar-hold-c"))),
	)
	if now := read(t, ctx, "B's Approve after C", chromedp.Evaluate[box](approveB)); now != at {
		t.Fatalf("C's arrival moved B's Approve from %v to %v under the pointer: the click aimed at it lands elsewhere", at, now)
	}
	type held struct {
		Present, Disabled bool
		Text              string
	}
	got := read(t, ctx, "A held", chromedp.Evaluate[held](`(() => { const c = document.querySelector('`+a+`');
		if (!c) return {Present: false};
		return {Present: true, Disabled: [...c.querySelectorAll('button')].every((x) => x.disabled), Text: c.innerText}; })()`))
	if !got.Present || !got.Disabled {
		t.Fatalf("the resolved card A: present %v, every button disabled %v; want it held in place, inert", got.Present, got.Disabled)
	}
	browse(t, ctx, "pointer leaves the list",
		chromedp.MouseEvent(chromedp.MouseMoved, 2, 2),
		chromedp.WaitNotPresent(css(a)),
	)
	order := read(t, ctx, "order", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#cards article')].map((c) => c.dataset.id)`))
	if len(order) != 2 || order[0] != "ar-hold-c" || order[1] != "ar-hold-b" {
		t.Fatalf("cards after the pointer left: %v, want [ar-hold-c ar-hold-b] (oldest first)", order)
	}
}

// addPendingCard is a page function that draws a pending refund request
// (id, created_at) for the Finance Lead, as the event stream would.
const addPendingCard = `(id, created) => upsert({approval_id: id, status: 'pending', kind: 'tool_call',
	tool_server: 'payments', tool_name: 'issue_refund', subject_id: 'ed25519:00', quorum: 1, tier: 0,
	created_at: created, expires_at: Math.floor(Date.now() / 1000) + 600,
	summary: 'Agent wants to refund ' + id, triggered_by: ['require_approval_always'],
	parameter_hash: 'sha256:00', arguments: {amount: 900, currency: 'USD'},
	trusted_approvers: ['` + financeLeadKey + `'], votes: []})`
