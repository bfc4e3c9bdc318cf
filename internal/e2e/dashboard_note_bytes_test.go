package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardSaysANoteIsTooLongInBytes: chio takes a note of at most
// 2000 bytes of UTF-8 (approval.MaxNoteLen), and the note box let an
// approver type 2000 characters: 1001 "é" (2002 bytes), or 700 characters
// of Japanese, were signed and refused by chiod as "malformed token:
// schema, id, decision or note", which tells the approver nothing they
// can act on. The page must say the note is too long, and by how much,
// before signing anything.
func TestDashboardSaysANoteIsTooLongInBytes(t *testing.T) {
	lk, open := dashboardAsLead(t)
	out := lk.pendingRefund(t, 650, "Refund a damaged item")
	ctx := open()
	c := card(out.ApprovalRequestID)
	browse(t, ctx, "a long note, Approve",
		chromedp.WaitVisible(css(c)),
		chromedp.SetValue(css(c+" textarea.note"), strings.Repeat("é", 1001)),
		press(c+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(c+" .card-error")),
	)
	msg := read(t, ctx, "card error", chromedp.Text(css(c+" .card-error")))
	if !strings.Contains(msg, "2002 bytes") || !strings.Contains(msg, "2000") {
		t.Errorf("a note of 2002 bytes is answered %q; want that it is 2002 bytes, more than the 2000 chio takes", msg)
	}
	var view struct{ Status string }
	lk.get(t, "/approvals/"+out.ApprovalRequestID, &view)
	if view.Status != "pending" {
		t.Fatalf("the request is %s, want pending", view.Status)
	}
}
