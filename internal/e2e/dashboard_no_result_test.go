package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// An approved call without a result read "Approved — the tool failed: …"
// on the card and in the history whatever became of it: also a call the
// tool never received ("… failed: not delivered: …") and one whose answer
// was lost after it was sent ("… failed: outcome unknown: …"), which may
// have run. An approver reading "the tool failed" may ask for it again.
func TestDashboardSaysWhatBecameOfACallWithoutAResult(t *testing.T) {
	lk, open := dashboardAsLead(t)
	lost := lk.submit(t, "refunds", "issue_refund", `{"order":"A-601","amount":650,"currency":"USD","lose":true}`,
		`{"purpose":"Refund a damaged item","max_amount":{"units":650,"currency":"USD"}}`)
	unreachable := lk.submit(t, "refunds", "issue_refund", `{"order":"A-602","amount":650,"currency":"USD","unreachable":true}`,
		`{"purpose":"Refund a damaged item","max_amount":{"units":650,"currency":"USD"}}`)
	for _, out := range []*kernel.Outcome{lost, unreachable} {
		if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("not parked: %+v", out)
		}
	}
	ctx := open()
	for _, c := range []struct {
		id, card, history, pill string
	}{
		{lost.ApprovalRequestID, "Approved — its outcome is unknown: the tool may have run it: delivery failed: connection reset after the call was sent",
			"Approved by Finance Lead — its outcome is unknown: the tool may have run it: delivery failed: connection reset after the call was sent", "outcome unknown"},
		{unreachable.ApprovalRequestID, "Approved — not delivered: the tool never received it: not delivered: connection refused",
			"Approved by Finance Lead — not delivered: the tool never received it: not delivered: connection refused", "not delivered"},
	} {
		sel := card(c.id)
		browse(t, ctx, "approve", chromedp.WaitVisible(css(sel)), press(sel+` button[data-action="approve"]`), chromedp.WaitVisible(css(sel+" .card-error")))
		if msg := read(t, ctx, "card", chromedp.Text(css(sel+" .card-error"))); !strings.Contains(msg, c.card) || strings.Contains(msg, "the tool failed") {
			t.Errorf("card of %s says %q; want %q", c.id, msg, c.card)
		}
		row := `#history-rows tr[data-id="` + c.id + `"]`
		browse(t, ctx, "history", press("#tab-history"), chromedp.WaitVisible(css(row)))
		if got := read(t, ctx, "history outcome", chromedp.Text(css(row+" .h-outcome"))); got != c.history {
			t.Errorf("history of %s says %q; want %q", c.id, got, c.history)
		}
		if got := read(t, ctx, "history pill", chromedp.Text(css(row+" .pill"))); got != c.pill {
			t.Errorf("history pill of %s says %q; want %q", c.id, got, c.pill)
		}
		browse(t, ctx, "back", press("#tab-pending"))
	}
}
