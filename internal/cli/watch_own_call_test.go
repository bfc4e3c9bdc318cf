package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// TestWatchDoesNotOfferTheApproversOwnCall: an agent runs with the Finance
// Lead's key (the lead is also an approver of the refunds grant), and its
// refund parks for the CFO. approver.md promises that `chio approval
// watch` follows the requests you may decide, and that you can never
// approve a call made with your own key. The lead's watch prompted it all
// the same: had the lead approved, a token was signed and posted, and
// chiod refused it (403, "the requesting agent's key cannot approve its
// own call"); on a terminal it was then offered again, and again. The
// CFO, who may decide it, is still shown it.
func TestWatchDoesNotOfferTheApproversOwnCall(t *testing.T) {
	w := newApprovalWorld(t)
	lead, err := keys.LoadPrivateKey(w.key("lead"))
	if err != nil {
		t.Fatal(err)
	}
	capRaw, _, err := w.k.IssueCapability(lead.Public(), []string{"refunds"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out := w.tw.SubmitCall(t, w.tw.CallAs(t, lead, capRaw, "demo", "issue_refund",
		`{"customer_id":"cust-1","amount":450,"currency":"USD"}`, `{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`))
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("the lead's own refund did not park for the CFO: %+v", out)
	}

	// A refund of the agent's, which the lead may decide, is shown (and
	// skipped) instead; then input ends.
	other := w.refund(t, 450)
	so, se, code := w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	if code != 0 || strings.Contains(so, out.ApprovalRequestID) || !strings.Contains(so, "skipped "+other.ApprovalRequestID) {
		t.Fatalf("exit %d; the lead's watch offered the lead's own call, which the kernel never lets the lead decide:\n%s\n%s", code, so, se)
	}
	if req, err := w.k.Approval(out.ApprovalRequestID); err != nil || req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("the request changed: %+v %v", req, err)
	}

	so, se, code = w.watch(t, adminEnv(), strings.NewReader("s\ns\n"), "--key", w.key("cfo"))
	if code != 0 || !strings.Contains(so, "skipped "+out.ApprovalRequestID) {
		t.Fatalf("exit %d; the CFO's watch did not offer the request the CFO may decide:\n%s\n%s", code, so, se)
	}
}
