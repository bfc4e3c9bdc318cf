package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
)

// A call's output belongs to its agent and to bearer-token holders (GET
// /v1/calls/{id}); approvers read requests, never outputs (an approver
// session is refused GET /v1/calls/{id}, and the stream's call.completed
// leaves the output out). The answer to the vote that approved a call says
// how the call ended, not what the tool returned: otherwise the approver
// whose vote happened to complete the quorum reads what a tool returned
// to the agent (a file, a secret), which no other route shows them.
func TestRespondAnswerCarriesNoToolOutput(t *testing.T) {
	f := newApprovalsFixture(t)
	pending := f.pendingRefund(t)
	code, m := f.do(t, "POST", "/approvals/"+pending.ApprovalRequestID+"/respond",
		respondBody(f.token(t, keyAlice, pending.ApprovalRequestID, "approved", nil), `,"channel":"dashboard"`), nil)
	if code != 200 || m["outcome"] != "approved" {
		t.Fatalf("respond: %d %v", code, m)
	}
	call, _ := m["call"].(map[string]any)
	if call == nil || call["status"] != "allowed" || call["receipt_id"] == "" {
		t.Fatalf("the answer must still say how the call ended: %v", m)
	}
	if out, ok := call["output"]; ok {
		t.Fatalf("the approver's respond answer carries the tool's output: %v", out)
	}
	// The agent and token holders still read it.
	code, m = f.do(t, "GET", "/v1/calls/"+pending.RequestID, "", withBearer(approvalsReader))
	if code != 200 || !strings.Contains(fmt.Sprint(m["output"]), "done:") {
		t.Fatalf("call status with the reader token: %d %v", code, m)
	}
}
