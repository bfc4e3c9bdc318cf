package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A per-call approval token names no kernel, but it binds request_id: the
// approval request's id, which each kernel mints afresh (ar-<UUIDv7>) when
// it parks a call. So an approval Alice gave at staging answers nothing at
// production, even for the same agent's call with the same request id,
// arguments and intent (so the same governed_intent_hash) parked there.
func TestApprovalTokenAnswersOnlyTheRequestOfItsKernel(t *testing.T) {
	c := clock.NewFake(time.Unix(1_800_000_000, 0))
	staging := deployment(t, "staging-staging-staging-staging-", c)
	production := deployment(t, "production-production-production", c)
	park := func(f *approvalsFixture) *kernel.Outcome {
		t.Helper()
		capRaw, _, err := f.k.IssueCapability(keyAgent.Public(), []string{"refunds"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		call := &kernel.ToolCall{RequestID: "req-the-same", Capability: capRaw, Server: "pay", Tool: "refund",
			Arguments:      json.RawMessage(`{"amount":450,"currency":"USD"}`),
			GovernedIntent: json.RawMessage(`{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`)}
		testkit.Sign(t, call, keyAgent, c.Now())
		out := f.w.SubmitCall(t, call)
		if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("want the refund parked, got %+v", out)
		}
		return out
	}
	atStaging, atProduction := park(staging), park(production)
	if atStaging.ApprovalRequestID == atProduction.ApprovalRequestID {
		t.Fatalf("both kernels parked the call as %s", atStaging.ApprovalRequestID)
	}
	tok := staging.token(t, keyAlice, atStaging.ApprovalRequestID, "approved", nil)

	status, m := production.do(t, "POST", "/approvals/"+atProduction.ApprovalRequestID+"/respond", respondBody(tok, ""), nil)
	if status != 403 || m["error"] != "approval_rejected" {
		t.Errorf("staging's approval answered production's request: %d %v, want 403 approval_rejected", status, m)
	}
	status, m = production.do(t, "POST", "/approvals/"+atStaging.ApprovalRequestID+"/respond", respondBody(tok, ""), nil)
	if status != 404 {
		t.Errorf("staging's request id at production: %d %v, want 404", status, m)
	}
	if rec, err := production.k.Call(atProduction.RequestID); err != nil || rec.Status != kernel.StatusPendingApproval {
		t.Errorf("production's call: %+v %v, want still pending", rec, err)
	}
	if status, m := staging.do(t, "POST", "/approvals/"+atStaging.ApprovalRequestID+"/respond", respondBody(tok, ""), nil); status != 200 {
		t.Errorf("staging refused its own approval: %d %v", status, m)
	}
}
