package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/httpapi"
)

// An agent reads its own parked call's approval request with a
// Chio-Proof (so that `chio await ar-…` works with the agent key alone).
// The request also records the channels' delivery failures
// (notify_errors), which are for approvers and operators: they name
// approvers' email addresses, the SMTP relay and what a webhook receiver
// answered. The agent, whose call it is and who is not trusted with how
// the operator reaches its approvers, read them all.
func TestAgentProofReadsNoDeliveryFailures(t *testing.T) {
	f := newApprovalsFixture(t)
	pend := f.pendingRefund(t)
	id := pend.ApprovalRequestID
	const secret = "to alice@corp.example: 550 5.1.1 mailbox unavailable at smtp.internal.example"
	if err := f.k.RecordNotifyFailure(context.Background(), id, "email", secret); err != nil {
		t.Fatal(err)
	}

	proof := map[string]string{httpapi.StatusProofHeader: httpapi.SignStatusProof(keyAgent, id, f.clock.Now())}
	code, agentView := f.do(t, "GET", "/approvals/"+id, "", proof)
	if code != 200 {
		t.Fatalf("the agent's own proof: %d %v", code, agentView)
	}
	raw, _ := json.Marshal(agentView)
	if strings.Contains(string(raw), "alice@corp.example") || strings.Contains(string(raw), "smtp.internal.example") {
		t.Fatalf("the agent's read of its approval request shows the channels' delivery failures:\n%s", raw)
	}
	if st, _ := agentView["status"].(string); st != "pending" {
		t.Fatalf("the agent's view lost the status it reads the request for: %v", agentView)
	}

	// Operators and approvers still see them: that is what they are for.
	code, readerView := f.do(t, "GET", "/approvals/"+id, "", withBearer(approvalsReader))
	raw, _ = json.Marshal(readerView)
	if code != 200 || !strings.Contains(string(raw), "alice@corp.example") {
		t.Fatalf("a reader no longer sees the delivery failures: %d %s", code, raw)
	}
}
