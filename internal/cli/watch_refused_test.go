package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// TestWatchOffersARefusedRequestAgain: the approver amends a refund of 450
// USD to 900 (more than they were shown: chiod refuses the token, 403
// amendment refused, and records nothing). The watch printed the refusal
// and dropped the request without a word on what became of it. With its
// answers piped (written in advance, one set per request shown) it is not
// asked again — that would hand it the next request's lines — but shown as
// it now is, still pending, with the command that decides it. On a
// terminal it is asked again (watch_again_linux_test.go).
func TestWatchOffersARefusedRequestAgain(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	refused := "m\n{\"customer_id\":\"cust-1\",\"amount\":900,\"currency\":\"USD\"}\n\n"
	so, se, code := w.watch(t, adminEnv(), strings.NewReader(refused), "--key", w.key("lead"))
	if code != 0 || !strings.Contains(so, "amendment refused") || strings.Count(so, "── "+out.ApprovalRequestID) != 2 ||
		!strings.Contains(so, "not asked again") || !strings.Contains(so, "chio approval approve|deny "+out.ApprovalRequestID) {
		t.Fatalf("exit %d; after chiod refused the amendment, the still pending request was not shown as it now is, with what decides it:\n%s\n%s", code, so, se)
	}
	if req, err := w.k.Approval(out.ApprovalRequestID); err != nil || req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("the refused vote changed the request: %+v %v", req, err)
	}
}
