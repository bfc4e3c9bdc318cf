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

// sink is a loopback SMTP server that keeps every message's data.
type sink struct {
	mu   sync.Mutex
	msgs []string
	rcpt []string
}

type sinkSession struct{ s *sink }

func (ss sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (ss sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.s.mu.Lock()
	ss.s.rcpt = append(ss.s.rcpt, to)
	ss.s.mu.Unlock()
	return nil
}
func (ss sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, string(b))
	ss.s.mu.Unlock()
	return nil
}
func (sinkSession) Reset()        {}
func (sinkSession) Logout() error { return nil }

func startSink(t *testing.T) (*sink, string) {
	t.Helper()
	s := &sink{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return sinkSession{s}, nil }))
	srv.Domain = "127.0.0.1"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s, ln.Addr().String()
}

// Two approvers who read one mailbox (a team address) each get their own
// message: a link is bound to one approver's key, so the other's would
// refuse their signature. The channel used to remember what it had sent
// by delivery and address, and skipped the second approver of an address
// it had just mailed, so one of them got no link at all.
func TestApproversSharingAnAddressEachGetTheirLink(t *testing.T) {
	box, addr := startSink(t)
	lead, _ := keys.Generate(nil)
	deputy, _ := keys.Generate(nil)
	team := func(key keys.PublicKey, name string) string {
		return fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = %q\ncontact = { email = \"finance@example.com\" }\n",
			key.String(), name)
	}
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, team(lead.Public(), "Lead")+team(deputy.Public(), "Deputy"))), "team.toml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := New(&policy.Email{SMTPAddr: addr, From: "chio@example.com"}, Options{PublicURL: "http://127.0.0.1:7420",
		Policy: func() *policy.Policy { return p }, Secret: make([]byte, 32), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "deploys", Status: approval.StatusPending,
		Summary: "Delete a file", ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		TrustedApprovers: []string{lead.Public().String(), deputy.Public().String()}}
	ctx := channels.WithDeliveryID(context.Background(), "d-1")
	if err := c.Deliver(ctx, "approval.requested", req); err != nil {
		t.Fatal(err)
	}
	// A retry of the same delivery sends nothing more.
	if err := c.Deliver(ctx, "approval.requested", req); err != nil {
		t.Fatal(err)
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	var to []string
	for _, m := range box.msgs {
		for _, name := range []string{"Lead", "Deputy"} {
			if strings.Contains(m, "Hello "+name+",") {
				to = append(to, name)
			}
		}
	}
	if len(box.msgs) != 2 || len(to) != 2 || to[0] == to[1] {
		t.Fatalf("%d messages for %v, want one for the Lead and one for the Deputy", len(box.msgs), to)
	}
}

// contact.email may be written with a display name ("Finance <f@x>"), which
// the policy accepts as an address: the message goes to the address in it.
// The channel used to put the whole text in RCPT TO, which a server
// refuses, so that approver was never mailed.
func TestContactWithADisplayNameIsMailed(t *testing.T) {
	box, addr := startSink(t)
	lead, _ := keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy,
		fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Lead\"\ncontact = { email = \"Finance Team <finance@example.com>\" }\n",
			lead.Public().String()))), "named.toml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := New(&policy.Email{SMTPAddr: addr, From: "chio@example.com"}, Options{PublicURL: "http://127.0.0.1:7420",
		Policy: func() *policy.Policy { return p }, Secret: make([]byte, 32), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, PolicyID: "deploys", Status: approval.StatusPending,
		Summary: "Delete a file", ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1, TrustedApprovers: []string{lead.Public().String()}}
	if err := c.Deliver(context.Background(), "approval.requested", req); err != nil {
		t.Fatalf("not mailed: %v", err)
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	if len(box.msgs) != 1 || len(box.rcpt) != 1 || box.rcpt[0] != "finance@example.com" {
		t.Fatalf("%d messages to %v", len(box.msgs), box.rcpt)
	}
}
