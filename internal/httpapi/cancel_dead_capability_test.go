package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// A capability that is revoked (its key may have leaked) or has expired
// lets its holder do nothing more: its key could still cancel the calls it
// had parked, and the log then said the agent withdrew a call the kernel
// had stopped trusting it with. The agent's cancel is refused 401
// unauthorized (chio.ErrUnauthorized) naming why, the request stays
// pending for the approvers (who see a call that will be denied) and an
// operator can still cancel it. Reading the call's outcome stays open to
// the agent: it changes nothing, and tells the agent how its call ended.
func TestRevokedOrExpiredCapabilityCannotCancelItsParkedCall(t *testing.T) {
	f := newApprovalsFixture(t)
	const reason = "customer withdrew"
	body := `{"reason":"` + reason + `"}`
	cancelAs := func(a keys.PrivateKey, id string) (int, map[string]any) {
		return f.do(t, "POST", "/approvals/"+id+"/cancel", body,
			map[string]string{httpapi.StatusProofHeader: httpapi.SignCancelProof(a, id, reason, f.clock.Now())})
	}
	stillPending := func(id string) {
		t.Helper()
		if req, err := f.k.Approval(id); err != nil || req.Status != approval.StatusPending {
			t.Fatalf("after a refused cancel the request is %v (%v), want pending", req, err)
		}
	}

	t.Run("revoked", func(t *testing.T) {
		out := f.pendingRefund(t)
		rec, err := f.k.Call(out.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.k.Revoke(t.Context(), rec.CapabilityID); err != nil {
			t.Fatal(err)
		}
		code, m := cancelAs(keyAgent, out.ApprovalRequestID)
		if msg, _ := m["message"].(string); code != http.StatusUnauthorized || m["error"] != "unauthorized" || !strings.Contains(msg, "revoked") {
			t.Fatalf("cancel under a revoked capability: %d %v, want 401 unauthorized saying it is revoked", code, m)
		}
		stillPending(out.ApprovalRequestID)
		// Reading is still the agent's.
		if code, m := f.do(t, "GET", "/v1/calls/"+out.RequestID, "",
			map[string]string{httpapi.StatusProofHeader: httpapi.SignStatusProof(keyAgent, out.RequestID, f.clock.Now())}); code != http.StatusOK {
			t.Fatalf("read under a revoked capability: %d %v", code, m)
		}
		// An operator still cancels it.
		if code, m := f.do(t, "POST", "/approvals/"+out.ApprovalRequestID+"/cancel", body, withBearer(approvalsAdmin)); code != http.StatusOK || m["status"] != kernel.StatusCancelled {
			t.Fatalf("admin cancel: %d %v", code, m)
		}
	})

	t.Run("expired", func(t *testing.T) {
		short := keys.FromSeed([]byte("short-short-short-short-short-32"))
		raw, _, err := f.k.IssueCapability(short.Public(), []string{"refunds"}, 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		out := f.w.SubmitCall(t, f.w.CallAs(t, short, raw, "pay", "refund", `{"amount":450,"currency":"USD"}`,
			`{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`))
		if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("want pending, got %+v", out)
		}
		f.clock.Advance(3 * time.Minute) // past the capability, before the approval's 600 s
		code, m := cancelAs(short, out.ApprovalRequestID)
		if msg, _ := m["message"].(string); code != http.StatusUnauthorized || m["error"] != "unauthorized" || !strings.Contains(msg, "expired") {
			t.Fatalf("cancel under an expired capability: %d %v, want 401 unauthorized saying it expired", code, m)
		}
		stillPending(out.ApprovalRequestID)
	})
}
