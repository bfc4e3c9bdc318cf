package email

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// stallSession accepts everything but holds RCPT TO for one address until
// the test ends: a relay whose recipient check for that mailbox hangs
// (a verification callout to a dead domain, a tarpit).
type stallSession struct {
	stall   string
	release <-chan struct{}
	mu      *sync.Mutex
	got     *[]string
	rcpt    string
}

func (s *stallSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *stallSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if to == s.stall {
		<-s.release
		return fmt.Errorf("gave up")
	}
	s.rcpt = to
	return nil
}
func (s *stallSession) Data(r io.Reader) error {
	if _, err := io.ReadAll(r); err != nil {
		return err
	}
	s.mu.Lock()
	*s.got = append(*s.got, s.rcpt)
	s.mu.Unlock()
	return nil
}
func (*stallSession) Reset()        {}
func (*stallSession) Logout() error { return nil }

// One approver's mailbox that the relay stalls on must not cost the other
// approvers their message. Deliver mailed recipients one after another
// within one attempt's deadline, in the same order on every retry (which
// resends only failures): the stalled recipient, first in the grant, took
// every attempt's whole time, and the approver after it was never mailed.
func TestAStalledRecipientDoesNotSilenceTheOthers(t *testing.T) {
	var mu sync.Mutex
	var got []string
	release := make(chan struct{})
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &stallSession{stall: "slow@example.com", release: release, mu: &mu, got: &got}, nil
	}))
	srv.Domain = "127.0.0.1"
	srv.ReadTimeout, srv.WriteTimeout = 30*time.Second, 30*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Cleanup(func() { close(release) }) // runs first: unblocks the stalled session

	slow, _ := keys.Generate(nil)
	lead, _ := keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, approverTOML(slow.Public(), "Slow")+approverTOML(lead.Public(), "Lead"))), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := New(&policy.Email{SMTPAddr: ln.Addr().String(), From: "chio@example.com"}, Options{PublicURL: "http://127.0.0.1:7420",
		Policy: func() *policy.Policy { return p }, Secret: make([]byte, 32), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "deploys", Status: approval.StatusPending,
		Summary: "Delete a file", ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		TrustedApprovers: []string{slow.Public().String(), lead.Public().String()}}
	for attempt := 1; attempt <= 2; attempt++ { // the hub's retry resends the failures only
		ctx, cancel := context.WithTimeout(channels.WithDeliveryID(context.Background(), "d-1"), 3*time.Second)
		err := c.Deliver(ctx, "approval.requested", req)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "slow@example.com") {
			t.Fatalf("attempt %d: %v, want a failure naming the stalled slow@example.com", attempt, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "lead@example.com" {
		t.Fatalf("mailed %v, want the Lead's message (lead@example.com) despite the stalled mailbox", got)
	}
}
