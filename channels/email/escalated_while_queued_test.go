package email

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// The approval.requested job of a request waits in the hub's queue (the
// relay is down, the queue is busy) while the request escalates and its
// next tier adds the CFO. The job mails from the stored state, which now
// trusts the CFO too: the CFO was mailed "Approval needed" by the first
// tier's announcement and then "Escalated: approval needed" by the
// escalation's, two messages with two links for one request. A job mails
// only the approvers its own announcement was about (and who may still
// decide); those an escalation added are the escalation's to mail.
func TestRequestedJobQueuedAcrossAnEscalationMailsOnlyItsTier(t *testing.T) {
	box, addr := startSink(t)
	lead, _ := keys.Generate(nil)
	cfo, _ := keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, approverTOML(lead.Public(), "Lead")+approverTOML(cfo.Public(), "CFO"))), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	announced := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "deploys", Status: approval.StatusPending,
		Summary: "Delete a file", ExpiresAt: now.Add(time.Minute).Unix(), Quorum: 1, Tier: 0,
		TrustedApprovers: []string{lead.Public().String()}}
	escalated := *announced
	escalated.Tier, escalated.ExpiresAt = 1, now.Add(time.Hour).Unix()
	escalated.TrustedApprovers = []string{lead.Public().String(), cfo.Public().String()}
	c, err := New(&policy.Email{SMTPAddr: addr, From: "chio@example.com"}, Options{PublicURL: "http://127.0.0.1:7420",
		Policy: func() *policy.Policy { return p }, Secret: make([]byte, 32), Now: func() time.Time { return now },
		Current: func(string) (*approval.Request, error) { cp := escalated; return &cp, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-1"), "approval.requested", announced); err != nil {
		t.Fatal(err)
	}
	if err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-2"), "approval.escalated", &escalated); err != nil {
		t.Fatal(err)
	}
	box.mu.Lock()
	rcpt := slices.Clone(box.rcpt)
	box.mu.Unlock()
	slices.Sort(rcpt)
	if want := []string{"cfo@example.com", "lead@example.com", "lead@example.com"}; !slices.Equal(rcpt, want) {
		t.Fatalf("mailed %v, want %v: the CFO once (by the escalation), the Lead by each tier", rcpt, want)
	}
}
