package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// TestWatchOffersARefusedRequestAgain: the approver amends a refund of 450
// USD to 900 (more than they were shown: chiod refuses the token, 403
// amendment refused, and records nothing). The watch printed the refusal
// and dropped the request for good — it prompts each request once — so
// the approver could no longer answer it from the watch, though it was
// still pending. A request chiod refused a vote on, that this key may
// still decide, is read again and offered again, with the reason.
func TestWatchOffersARefusedRequestAgain(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	refused := "m\n{\"customer_id\":\"cust-1\",\"amount\":900,\"currency\":\"USD\"}\n\n"
	// Input ends after the refused answer: the request, offered again,
	// meets the end of input at its prompt.
	so, se, code := w.watch(t, adminEnv(), strings.NewReader(refused), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "amendment refused") || strings.Count(so, "── "+out.ApprovalRequestID) != 2 {
		t.Fatalf("exit %d; after chiod refused the amendment, the still pending request was not offered again:\n%s\n%s", code, so, se)
	}
	// Offered again, it is answered.
	so, se, code = w.watch(t, adminEnv(), strings.NewReader(refused+"a\nwithin what I saw\n"), "--key", w.key("lead"))
	req, err := w.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || req.Status != approval.StatusApproved || len(req.Votes) != 1 || req.Votes[0].Note != "within what I saw" {
		t.Fatalf("exit %d; the request is %s with %d votes\n%s\n%s", code, req.Status, len(req.Votes), so, se)
	}
	if rec, _ := w.k.Call(out.RequestID); !strings.Contains(string(rec.Output), `"amount":450`) {
		t.Fatalf("the call ran with %s", rec.Output)
	}
}
