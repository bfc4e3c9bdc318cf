package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// TestDashboardSaysTheApproversOwnCallIsNotTheirsToDecide: an agent runs
// with the Finance Lead's key, and its refund parks for the CFO (the lead
// is an approver of the grant too). approver.md: you can never approve a
// call made with your own key. The lead's dashboard drew the card like any
// other, Approve and Deny with no word that the kernel refuses that vote
// (a key the request does not trust gets "the kernel will refuse your
// decision"); a click signed a token chiod answered 403.
func TestDashboardSaysTheApproversOwnCallIsNotTheirsToDecide(t *testing.T) {
	lk, open := dashboardAsLead(t)
	lead, err := keys.LoadPrivateKey(filepath.Join(repoRoot(), "examples", "keys", "finance-lead.pem"))
	if err != nil {
		t.Fatal(err)
	}
	capRaw, _, err := lk.k.IssueCapability(lead.Public(), []string{"refunds"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := &kernel.ToolCall{RequestID: fmt.Sprintf("req-own-%d", time.Now().UnixNano()), Capability: capRaw, Server: "payments",
		Tool: "issue_refund", Arguments: json.RawMessage(`{"order":"A-700","amount":650,"currency":"USD"}`),
		GovernedIntent: json.RawMessage(`{"purpose":"Refund my own order","max_amount":{"units":650,"currency":"USD"}}`)}
	testkit.Sign(t, c, lead, time.Now())
	own, err := lk.k.Submit(context.Background(), c)
	if err != nil || own.Status != kernel.StatusPendingApproval {
		t.Fatalf("the lead's own refund did not park for the CFO: %+v %v", own, err)
	}
	other := lk.pendingRefund(t, 650, "Refund a damaged item")

	ctx := open()
	browse(t, ctx, "cards", chromedp.WaitVisible(css(card(own.ApprovalRequestID))), chromedp.WaitVisible(css(card(other.ApprovalRequestID))))
	warning := func(id string) string {
		return read(t, ctx, "warning", chromedp.Evaluate[string](`(document.querySelector('`+card(id)+` .warn') || {}).textContent || ''`))
	}
	if w := warning(own.ApprovalRequestID); !strings.Contains(w, "your own key") {
		t.Errorf("the card of the lead's own call says %q; want that the kernel refuses a vote on a call made with your own key", w)
	}
	if w := warning(other.ApprovalRequestID); w != "" {
		t.Errorf("the card of a call the lead may decide warns %q", w)
	}
}
