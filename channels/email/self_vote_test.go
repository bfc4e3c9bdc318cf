package email

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
)

// An approver whose key is the calling agent's, or a grant requester's,
// can never decide the request: the kernel counts neither vote
// (approval.Request.MayDecide). Mailing them "An agent is waiting for
// your decision" with a link to vote asked for a decision that could
// never count. Only approvers who may decide are mailed; when nobody
// else has an address, the delivery fails as for no address at all.
func TestCallingAgentAndRequesterAreNotAskedToDecide(t *testing.T) {
	box, lead, cfo, c, now := leadAndCFOChannel(t)
	// The Lead's key is the calling agent's.
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "deploys", Status: approval.StatusPending,
		Summary: "Delete a file", ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		SubjectID: lead.Public().String(), SubjectPublicKey: lead.Public().String(),
		TrustedApprovers: []string{lead.Public().String(), cfo.Public().String()}}
	if err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-1"), "approval.requested", req); err != nil {
		t.Fatal(err)
	}
	box.mu.Lock()
	rcpt := append([]string(nil), box.rcpt...)
	box.mu.Unlock()
	if len(rcpt) != 1 || rcpt[0] != "cfo@example.com" {
		t.Fatalf("mailed %v, want only the CFO (the Lead is the calling agent: its vote never counts)", rcpt)
	}
	// The CFO is a requester of the grant and the agent is another key:
	// only the Lead may decide.
	other, _ := keys.Generate(nil)
	req2 := *req
	req2.ApprovalID, req2.SubjectID, req2.SubjectPublicKey = "ar-2", other.Public().String(), other.Public().String()
	req2.Requesters = []string{cfo.Public().String()}
	if err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-2"), "approval.requested", &req2); err != nil {
		t.Fatal(err)
	}
	box.mu.Lock()
	rcpt = append([]string(nil), box.rcpt[1:]...)
	box.mu.Unlock()
	if len(rcpt) != 1 || rcpt[0] != "lead@example.com" {
		t.Fatalf("mailed %v, want only the Lead (the CFO is a requester: its vote never counts)", rcpt)
	}
	// Nobody with an address may decide: a failure, and nobody mailed.
	req3 := req2
	req3.ApprovalID, req3.SubjectID, req3.SubjectPublicKey = "ar-3", lead.Public().String(), lead.Public().String()
	err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-3"), "approval.requested", &req3)
	box.mu.Lock()
	n := len(box.rcpt)
	box.mu.Unlock()
	if err == nil || n != 2 {
		t.Fatalf("only the agent and a requester have addresses: %v, %d messages in all; want a failure and none more", err, n)
	}
	if !strings.Contains(err.Error(), "nobody was emailed") {
		t.Fatalf("error %v", err)
	}
}
