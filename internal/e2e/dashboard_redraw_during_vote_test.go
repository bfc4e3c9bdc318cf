package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardRedrawDuringOwnVoteKeepsItsResult: a card whose progress
// changes while the approver's own vote is in flight (an escalation, or
// another approver's vote, racing the answer to this one) was drawn again
// at once; the vote's answer then went to the card that had been replaced,
// off the page. The approver never saw "Approved — executed" (or, worse,
// "Approved, but the call did not run: …"), and the fresh card offered the
// buttons again. The redraw waits for the vote's answer, which is shown.
func TestDashboardRedrawDuringOwnVoteKeepsItsResult(t *testing.T) {
	lk, open := dashboardAsLead(t)
	ctx := open()
	pend := lk.pendingRefund(t, 450, "Refund raced by an escalation")
	c := card(pend.ApprovalRequestID)
	browse(t, ctx, "vote held in flight, then the card's progress changes",
		chromedp.WaitVisible(css(c+` button[data-action="approve"]`)),
		// The answer to the vote is held back until released: the vote
		// reaches chiod and commits; only its answer waits.
		// The request as the page holds it before the vote: once the vote
		// commits, the stream may remove it from state.pending (resolved)
		// before the escalation below is staged.
		chromedp.Evaluate[chromedp.Void](`(() => {
			window.__req = state.pending.get('`+pend.ApprovalRequestID+`');
			window.__held = new Promise((r) => { window.__release = r; });
			const f = window.fetch;
			window.fetch = async (u, o) => {
				const res = await f(u, o);
				if (String(u).includes('/respond')) await window.__held;
				return res;
			};
		})()`),
		press(c+` button[data-action="approve"]`),
		chromedp.WaitReady(css(c+`[data-deciding]`)),
		// The same request, escalated meanwhile (as the stream would say).
		chromedp.Evaluate[chromedp.Void](`(() => { const r = window.__req;
			upsert({...r, tier: (r.tier || 0) + 1, expires_at: r.expires_at + 60}); })()`),
		chromedp.Evaluate[chromedp.Void](`window.__release()`),
	)
	got := read(t, ctx, "the vote's answer", chromedp.Evaluate[string](`new Promise((done) => {
		const seen = () => { const ok = [...document.querySelectorAll('`+c+` .card-ok')].find((e) => !e.hidden && e.isConnected);
			if (ok) done(ok.textContent); else setTimeout(seen, 20); };
		seen(); setTimeout(() => done(''), 20000); })`, chromedp.EvalAwaitPromise))
	if !strings.Contains(got, "Approved") {
		t.Fatalf("the approver's own vote's answer is not on the page (%q): it went to the card the redraw replaced", got)
	}

	// A vote that does not end the request (here refused: the request is
	// the page's own, unknown to chiod): the progress that arrived while
	// it was in flight is drawn once its answer is shown, and the answer
	// stays on the fresh card.
	const fake = `(votes) => upsert({approval_id: 'ar-redraw-2', status: 'pending', kind: 'tool_call',
		tool_server: 'payments', tool_name: 'issue_refund', subject_id: 'ed25519:00', quorum: 2, tier: 0,
		created_at: 1700000000, expires_at: Math.floor(Date.now() / 1000) + 600,
		summary: 'Agent wants to refund 300 USD', triggered_by: ['require_approval_always'],
		parameter_hash: 'sha256:00', arguments: {amount: 300, currency: 'USD'},
		trusted_approvers: ['` + financeLeadKey + `', '` + cfoKey + `'], votes})`
	f := card("ar-redraw-2")
	browse(t, ctx, "a second vote held in flight, then another approver's vote arrives",
		chromedp.Evaluate[chromedp.Void](`(`+fake+`)([])`),
		chromedp.Evaluate[chromedp.Void](`window.__held = new Promise((r) => { window.__release = r; })`),
		press(f+` button[data-action="approve"]`),
		chromedp.WaitReady(css(f+`[data-deciding]`)),
		chromedp.Evaluate[chromedp.Void](`(`+fake+`)([{approver: '`+cfoKey+`', decision: 'approved'}])`),
		chromedp.Evaluate[chromedp.Void](`window.__release()`),
	)
	type after struct {
		Pips  int
		Error string
	}
	a := read(t, ctx, "after", chromedp.Evaluate[after](`new Promise((done) => {
		const look = () => { const c = document.querySelector('`+f+`'), e = c && c.querySelector('.card-error');
			if (c && !c.dataset.deciding && e && !e.hidden) done({Pips: c.querySelectorAll('.pip.on').length, Error: e.textContent});
			else setTimeout(look, 20); };
		look(); setTimeout(() => done({}), 20000); })`, chromedp.EvalAwaitPromise))
	if a.Pips != 1 || a.Error == "" {
		t.Fatalf("after the held vote's answer: %d approvals drawn, error shown %q; want the other approver's vote drawn and this vote's answer kept", a.Pips, a.Error)
	}
}
