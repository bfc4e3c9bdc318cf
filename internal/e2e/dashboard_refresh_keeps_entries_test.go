package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardRefreshKeepsWhatTheApproverEntered: a card is drawn again
// when its request's progress changes (an escalation moves its tier and
// deadline, another approver votes). Only the note was carried over: an
// open Amend box closed, what was typed in it was dropped, and "Approve"
// (the original call) took the place of "Approve amended" under the
// approver's pointer, so the click meant for 400 USD approved 900; ticked
// answers were cleared as well. Whatever the approver entered must
// survive the refresh.
func TestDashboardRefreshKeepsWhatTheApproverEntered(t *testing.T) {
	_, open := dashboardAsLead(t)
	ctx := open()
	// The page's own upsert, as for requests and their progress from the stream.
	const refund = `(tier, extra) => upsert({approval_id: 'ar-refresh', status: 'pending', kind: 'tool_call',
		tool_server: 'payments', tool_name: 'edit_refund', subject_id: 'ed25519:00', quorum: 1, tier,
		created_at: 1700000000, expires_at: Math.floor(Date.now() / 1000) + 600 * (tier + 1),
		summary: 'Agent wants to charge edit_refund on payments for 900 USD', triggered_by: ['require_approval_always'],
		parameter_hash: 'sha256:00', arguments: {amount: 900, currency: 'USD', order: 'A-77'},
		trusted_approvers: ['` + financeLeadKey + `'], votes: [], ...extra})`
	const ask = `(votes) => upsert({approval_id: 'ar-refresh-ask', status: 'pending', kind: 'question',
		tool_server: 'assistant', tool_name: 'ask', subject_id: 'ed25519:00', quorum: 2, tier: 0,
		created_at: 1700000001, expires_at: Math.floor(Date.now() / 1000) + 600,
		summary: 'Which carrier?', triggered_by: ['hitl'], parameter_hash: 'sha256:00',
		questions: [{id: 'carrier', text: 'Carrier', type: 'single', options: ['UPS', 'DHL']},
			{id: 'why', text: 'Why', type: 'text'}],
		trusted_approvers: ['` + financeLeadKey + `', '` + cfoKey + `'], votes})`
	sel, asel := card("ar-refresh"), card("ar-refresh-ask")
	amended := `{"amount": 400, "currency": "USD", "order": "A-77"}`
	browse(t, ctx, "render and enter",
		chromedp.Evaluate[chromedp.Void](`(`+refund+`)(0, {})`),
		chromedp.Evaluate[chromedp.Void](`(`+ask+`)([])`),
		press(sel+` button[data-action="amend"]`),
		chromedp.WaitVisible(css(sel+" textarea.amend-args")),
		chromedp.SetValue(css(sel+" textarea.amend-args"), amended),
		press(asel+` input[value="DHL"]`),
		chromedp.SetValue(css(asel+" textarea.answer-text"), "cheaper"),
	)
	browse(t, ctx, "refresh",
		chromedp.Evaluate[chromedp.Void](`(`+refund+`)(1, {})`),
		chromedp.Evaluate[chromedp.Void](`(`+ask+`)([{approver: '`+cfoKey+`', decision: 'approved'}])`),
		chromedp.WaitVisible(css(sel+" .badge-tier")),
	)
	type shown struct {
		AmendOpen, ApproveShown, AmendSubmitShown, DHL bool
		Amended, Why                                   string
	}
	got := read(t, ctx, "after refresh", chromedp.Evaluate[shown](`(() => {
		const c = document.querySelector('`+sel+`'), a = document.querySelector('`+asel+`');
		const shown = (e) => !!e && e.checkVisibility();
		return {
			AmendOpen: shown(c.querySelector('.amend')),
			ApproveShown: shown(c.querySelector('button[data-action="approve"]')),
			AmendSubmitShown: shown(c.querySelector('button[data-action="amend-submit"]')),
			Amended: c.querySelector('textarea.amend-args').value,
			DHL: a.querySelector('input[value="DHL"]').checked,
			Why: a.querySelector('textarea.answer-text').value,
		};
	})()`))
	if !got.AmendOpen || got.ApproveShown || !got.AmendSubmitShown || strings.TrimSpace(got.Amended) != amended {
		t.Errorf("after an escalation refreshed the card, the Amend box open: %v, its text %q, Approve shown: %v, Approve amended shown: %v; "+
			"want the box open with %q and only Approve amended", got.AmendOpen, got.Amended, got.ApproveShown, got.AmendSubmitShown, amended)
	}
	if !got.DHL || got.Why != "cheaper" {
		t.Errorf("after another approver's vote refreshed the card, DHL ticked: %v, typed answer %q; want both kept", got.DHL, got.Why)
	}
}
