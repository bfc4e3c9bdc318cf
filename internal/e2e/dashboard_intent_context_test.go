package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// TestDashboardShowsTheIntentContext: a governed intent is {purpose,
// max_amount, action_category, context}; approvers read it (the kernel
// holds the context's strings to the rules for text shown to approvers),
// and the approval binds all of it (parameter_hash covers the whole
// intent). The card drew the purpose, the amount and the category, never
// the context: an approver signed for text they were not shown, which the
// receipts then record as approved. The context must be drawn, whole.
func TestDashboardShowsTheIntentContext(t *testing.T) {
	lk, open := dashboardAsLead(t)
	long := strings.Repeat("y", 300)
	out := lk.submit(t, "refunds", "issue_refund", `{"order":"A-90","amount":900,"currency":"USD"}`,
		fmt.Sprintf(`{"purpose":"Goodwill refund","max_amount":{"units":900,"currency":"USD"},`+
			`"context":{"authorized_by":"the CFO, by phone","ticket":"T-%s-1"}}`, long))
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", out)
	}
	ctx := open()
	sel := card(out.ApprovalRequestID)
	browse(t, ctx, "card", chromedp.WaitVisible(css(sel)))
	text := read(t, ctx, "card text", chromedp.Text(css(sel)))
	for _, want := range []string{`"authorized_by"`, `"the CFO, by phone"`, `"ticket"`, `-1"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the card does not show the intent's context (%s):\n%s", want, text)
		}
	}
	// Measured until the card shows all it holds, for up to 3 s, as in
	// TestDashboardShowsTheWholeRequest (a card fades in).
	var cut []string
	for end := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cut = read(t, ctx, "cut", chromedp.Evaluate[[]string](`(`+unshownText+`)('`+sel+`')`))
		if len(cut) == 0 || time.Now().After(end) {
			break
		}
	}
	if len(cut) > 0 {
		t.Errorf("the card does not show all it holds; cut: %q", cut)
	}
}
