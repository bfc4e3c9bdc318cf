package email

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// An escalation (or a re-announcement after a reload added an approver)
// mails the request's approvers again. One who already voted was told "An
// agent is waiting for your decision" with a fresh link, though the
// kernel refuses their second vote: they read that their decision was
// lost, sign again and are refused. Only approvers who have not voted are
// mailed; when all who could be mailed have voted, there is nothing to
// tell and nothing failed.
func TestApproversWhoVotedAreNotAskedAgain(t *testing.T) {
	box, lead, cfo, c, now := leadAndCFOChannel(t)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "deploys", Status: approval.StatusPending,
		Summary: "Delete a file", ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 2, Tier: 1,
		TrustedApprovers: []string{lead.Public().String(), cfo.Public().String()},
		Votes:            []approval.Vote{{Approver: lead.Public().String(), Decision: approval.DecisionApproved, TokenID: "t-1"}}}
	if err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-1"), "approval.escalated", req); err != nil {
		t.Fatal(err)
	}
	box.mu.Lock()
	rcpt := append([]string(nil), box.rcpt...)
	box.mu.Unlock()
	if len(rcpt) != 1 || rcpt[0] != "cfo@example.com" {
		t.Fatalf("escalation mailed %v, want only the CFO (the Lead has voted)", rcpt)
	}
	// Both have voted (a denial short of deny_quorum): nobody to ask.
	req.Votes = append(req.Votes, approval.Vote{Approver: cfo.Public().String(), Decision: approval.DecisionDenied, TokenID: "t-2"})
	if err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-2"), "approval.escalated", req); err != nil {
		t.Fatalf("everyone reachable has voted: %v, want nothing to send and no failure", err)
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	if len(box.rcpt) != 1 {
		t.Fatalf("mailed %v after both voted", strings.Join(box.rcpt, ", "))
	}
}

// leadAndCFOChannel is an email channel whose policy's grant "deploys"
// has two approvers with addresses, the Lead (lead@example.com) and the
// CFO (cfo@example.com), sending to a loopback SMTP sink, its clock fixed
// at now.
func leadAndCFOChannel(t *testing.T) (box *sink, lead, cfo keys.PrivateKey, c *Channel, now time.Time) {
	t.Helper()
	box, addr := startSink(t)
	lead, _ = keys.Generate(nil)
	cfo, _ = keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, approverTOML(lead.Public(), "Lead")+approverTOML(cfo.Public(), "CFO"))), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	now = time.Now()
	c, err = New(&policy.Email{SMTPAddr: addr, From: "chio@example.com"}, Options{PublicURL: "http://127.0.0.1:7420",
		Policy: func() *policy.Policy { return p }, Secret: make([]byte, 32), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return box, lead, cfo, c, now
}
