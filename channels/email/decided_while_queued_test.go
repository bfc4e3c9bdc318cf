package email

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// A job waits in the hub's queue, or between retries while the relay is
// down, holding the request as it was announced. Meanwhile the request is
// decided (on the dashboard, in Slack) or one approver votes elsewhere.
// Mailing from the old snapshot told approvers "an agent is waiting for
// your decision" about a request already decided, or asked one who had
// voted to vote again. Before each send the channel reads the request's
// stored state (Options.Current) and mails only what that still asks.
func TestNoMailForARequestDecidedWhileQueued(t *testing.T) {
	box, addr := startSink(t)
	lead, _ := keys.Generate(nil)
	cfo, _ := keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, approverTOML(lead.Public(), "Lead")+approverTOML(cfo.Public(), "CFO"))), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	announced := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "deploys", Status: approval.StatusPending,
		Summary: "Delete a file", ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 2, Tier: 1,
		TrustedApprovers: []string{lead.Public().String(), cfo.Public().String()}}
	stored := *announced
	c, err := New(&policy.Email{SMTPAddr: addr, From: "chio@example.com"}, Options{PublicURL: "http://127.0.0.1:7420",
		Policy: func() *policy.Policy { return p }, Secret: make([]byte, 32), Now: func() time.Time { return now },
		Current: func(id string) (*approval.Request, error) {
			if id != "ar-1" {
				return nil, fmt.Errorf("asked for %q", id)
			}
			cp := stored
			return &cp, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	sent := func() []string {
		box.mu.Lock()
		defer box.mu.Unlock()
		return append([]string(nil), box.rcpt...)
	}
	// The Lead voted while the job was queued: only the CFO is asked.
	stored.Votes = []approval.Vote{{Approver: lead.Public().String(), Decision: approval.DecisionApproved, TokenID: "t-1"}}
	if err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-1"), "approval.requested", announced); err != nil {
		t.Fatal(err)
	}
	if got := sent(); len(got) != 1 || got[0] != "cfo@example.com" {
		t.Fatalf("mailed %v, want only the CFO (the Lead voted while the job was queued)", got)
	}
	// Decided while queued: nobody is mailed, and nothing failed.
	stored.Status = approval.StatusApproved
	if err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-2"), "approval.escalated", announced); err != nil {
		t.Fatalf("a request decided while queued: %v, want nothing to send and no failure", err)
	}
	if got := sent(); len(got) != 1 {
		t.Fatalf("mailed %v about a request decided while the job was queued", got)
	}
}
