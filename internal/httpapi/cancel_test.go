package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

// POST /approvals/{id}/cancel (issue 10, 6): the admin token or the parked
// call's own agent, with a proof in the cancel domain bound to the reason.
func TestCancelRoute(t *testing.T) {
	f := newApprovalsFixture(t)
	now := f.clock.Now()
	proof := func(id, reason string) map[string]string {
		return map[string]string{httpapi.StatusProofHeader: httpapi.SignCancelProof(keyAgent, id, reason, now)}
	}
	body := `{"reason":"customer withdrew"}`

	out := f.pendingRefund(t)
	id := out.ApprovalRequestID
	for name, c := range map[string]struct {
		hdr  map[string]string
		body string
		want int
	}{
		"no credential":            {nil, body, http.StatusUnauthorized},
		"reader token":             {withBearer(approvalsReader), body, http.StatusUnauthorized},
		"read proof":               {map[string]string{httpapi.StatusProofHeader: httpapi.SignStatusProof(keyAgent, id, now)}, body, http.StatusUnauthorized},
		"proof for another reason": {proof(id, "something else"), body, http.StatusUnauthorized},
		"another agent's proof":    {map[string]string{httpapi.StatusProofHeader: httpapi.SignCancelProof(keyOther, id, "customer withdrew", now)}, body, http.StatusUnauthorized},
		"unknown id, same answer":  {proof("ar-00000000-0000-7000-8000-000000000000", "customer withdrew"), body, http.StatusUnauthorized},
		"empty reason":             {withBearer(approvalsAdmin), `{"reason":" "}`, http.StatusBadRequest},
		"unknown field":            {withBearer(approvalsAdmin), `{"reason":"x","force":true}`, http.StatusBadRequest},
	} {
		t.Run(name, func(t *testing.T) {
			target := id
			if name == "unknown id, same answer" {
				target = "ar-00000000-0000-7000-8000-000000000000"
			}
			if code, m := f.do(t, "POST", "/approvals/"+target+"/cancel", c.body, c.hdr); code != c.want {
				t.Fatalf("%d %v", code, m)
			}
		})
	}
	// The agent cancels its own call with a cancel proof.
	code, m := f.do(t, "POST", "/approvals/"+id+"/cancel", body, proof(id, "customer withdrew"))
	if code != http.StatusOK || m["status"] != kernel.StatusCancelled || m["reason"] != "customer withdrew" {
		t.Fatalf("agent cancel: %d %v", code, m)
	}
	// Decided requests cannot be cancelled (409).
	if code, _ := f.do(t, "POST", "/approvals/"+id+"/cancel", body, withBearer(approvalsAdmin)); code != http.StatusConflict {
		t.Fatalf("second cancel: %d", code)
	}
	// An operator cancels another with the admin token.
	other := f.pendingRefund(t)
	code, m = f.do(t, "POST", "/approvals/"+other.ApprovalRequestID+"/cancel", `{"reason":"duplicate request"}`, withBearer(approvalsAdmin))
	if code != http.StatusOK || m["status"] != kernel.StatusCancelled {
		t.Fatalf("admin cancel: %d %v", code, m)
	}
	rec, _ := f.k.Call(other.RequestID)
	if r := f.w.Receipt(t, rec.ReceiptID); r.Metadata["cancelled_by"] != kernel.CancelledByAdmin {
		t.Fatalf("receipt: %v", r.Metadata)
	}
}

// An operator's cancel of an id that does not exist says which id, like
// every other route ("approval request \"ar-…\" not found"), not a bare
// "not found" that leaves a script guessing which of its ids was wrong.
func TestCancelUnknownIDNamesIt(t *testing.T) {
	f := newApprovalsFixture(t)
	const id = "ar-00000000-0000-7000-8000-000000000000"
	code, m := f.do(t, "POST", "/approvals/"+id+"/cancel", `{"reason":"duplicate"}`, withBearer(approvalsAdmin))
	if msg, _ := m["message"].(string); code != http.StatusNotFound || m["error"] != "not_found" || !strings.Contains(msg, id) {
		t.Fatalf("%d %v, want 404 not_found naming %s", code, m, id)
	}
}
