package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardRedrawsAnAmendingCardWhenItsQuorumRises: a reload that
// raises a pending request's quorum to 2 takes Amend away (the kernel
// refuses amended_arguments unless one approval resolves the call). With
// the approver's Amend box open, the card's redraw threw (keepEntries
// clicked the Amend button the fresh card no longer has), so the card
// stayed as first drawn, for good: "0 of 1 approval", its Amend box and
// "Approve amended" live, every later progress of the request lost too.
// The redraw must happen, and keep the approver's note.
func TestDashboardRedrawsAnAmendingCardWhenItsQuorumRises(t *testing.T) {
	_, open := dashboardAsLead(t)
	ctx := open()
	// The page's own upsert, as for requests and their progress from the stream.
	const refund = `(quorum) => upsert({approval_id: 'ar-quorum', status: 'pending', kind: 'tool_call',
		tool_server: 'payments', tool_name: 'edit_refund', subject_id: 'ed25519:00', quorum, tier: 0,
		created_at: 1700000000, expires_at: Math.floor(Date.now() / 1000) + 600,
		summary: 'Agent wants to charge edit_refund on payments for 900 USD', triggered_by: ['require_approval_always'],
		parameter_hash: 'sha256:00', arguments: {amount: 900, currency: 'USD', order: 'A-77'},
		trusted_approvers: ['` + financeLeadKey + `', '` + cfoKey + `'], votes: []})`
	sel := card("ar-quorum")
	browse(t, ctx, "render, open Amend, write a note",
		chromedp.Evaluate[chromedp.Void](`(`+refund+`)(1)`),
		press(sel+` button[data-action="amend"]`),
		chromedp.WaitVisible(css(sel+" textarea.amend-args")),
		chromedp.SetValue(css(sel+" textarea.note"), "checked with the customer"),
	)
	threw := read(t, ctx, "quorum rises", chromedp.Evaluate[string](`(() => {
		try { (`+refund+`)(2); return ''; } catch (e) { return String(e); }
	})()`))
	type shown struct {
		Quorum, Note                        string
		AmendBox, AmendSubmit, ApproveShown bool
	}
	got := read(t, ctx, "after the rise", chromedp.Evaluate[shown](`(() => {
		const c = document.querySelector('`+sel+`');
		const shown = (e) => !!e && e.checkVisibility();
		return {
			Quorum: c.querySelector('.quorum').textContent,
			Note: c.querySelector('textarea.note').value,
			AmendBox: shown(c.querySelector('.amend')),
			AmendSubmit: shown(c.querySelector('button[data-action="amend-submit"]')),
			ApproveShown: shown(c.querySelector('button[data-action="approve"]')),
		};
	})()`))
	if threw != "" || !strings.Contains(got.Quorum, "of 2 approvals") || got.AmendBox || got.AmendSubmit || !got.ApproveShown {
		t.Errorf("after the quorum rose to 2 (redraw threw: %q) the card says %q, Amend box shown: %v, Approve amended shown: %v, Approve shown: %v; "+
			"want \"0 of 2 approvals\", no Amend, Approve", threw, got.Quorum, got.AmendBox, got.AmendSubmit, got.ApproveShown)
	}
	if got.Note != "checked with the customer" {
		t.Errorf("after the quorum rose the note reads %q, want what the approver wrote kept", got.Note)
	}
}
