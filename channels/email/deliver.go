package email

// Delivery: one SMTP message per trusted approver with an address.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"slices"
	"sync"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
)

// recipient is one approver reachable by email.
type recipient struct {
	key, name, addr string
}

// recipients are req's approvers with an address who may decide it and
// have not voted; voted counts those left out only because they have (the
// kernel refuses a second vote: "waiting for your decision" would be
// untrue). An approver whose key is the calling agent's or a requester's
// is never mailed: the kernel never counts that vote (MayDecide, the rule
// Verify applies), so a link to cast it would ask for nothing.
func (c *Channel) recipients(req *approval.Request) (out []recipient, voted int) {
	p := c.o.Policy()
	if p == nil {
		return nil, 0
	}
	g, ok := p.Grant(req.PolicyID)
	if !ok || g.Approval == nil {
		return nil, 0
	}
	for _, ap := range g.Approval.Approvers {
		key := ap.PublicKey.String()
		if ap.Contact.Email == "" || !req.MayDecide(key) {
			continue
		}
		if req.HasVoted(key) {
			voted++
			continue
		}
		out = append(out, recipient{key: key, name: ap.DisplayName, addr: ap.Contact.Email})
	}
	return out, voted
}

// Deliver sends one message per trusted approver with an email address on
// approval.requested and approval.escalated, except to those who have
// voted already; other events need no mail. It mails only approvers req,
// as announced, trusted: those an escalation added meanwhile are mailed by
// the escalation's own delivery.
// When no approver who may decide req has an address it fails (permanently) rather
// than report a delivery that told nobody.
// Each recipient gets its own SMTP transaction, up to maxParallelSends at
// once, so a mailbox the relay stalls on delays only its own message.
// Recipients already served by an earlier attempt of the same delivery are
// skipped, so the hub's retries never send twice.
func (c *Channel) Deliver(ctx context.Context, event string, req *approval.Request) error {
	if event != "approval.requested" && event != "approval.escalated" {
		return nil
	}
	announced := req
	if c.o.Current != nil {
		if cur, err := c.o.Current(req.ApprovalID); err == nil && cur != nil && cur.ApprovalID == req.ApprovalID {
			req = cur
		}
	}
	if req.Status != approval.StatusPending {
		return nil
	}
	deadline := time.Unix(req.ExpiresAt, 0)
	if !c.o.Now().Before(deadline) {
		return nil // nothing left to decide
	}
	rcpts, voted := c.recipients(req)
	// A job mails only the approvers its announcement was about: those an
	// escalation (or a reload) added while it waited are told by that
	// event's own announcement, and mailing them here too sent them two
	// messages for one request.
	others := len(rcpts)
	rcpts = slices.DeleteFunc(rcpts, func(r recipient) bool { return !announced.Trusts(r.key) })
	others -= len(rcpts)
	if len(rcpts) == 0 && (voted > 0 || others > 0) {
		return nil // everyone this announcement reaches has decided already, or is another's to tell
	}
	if len(rcpts) == 0 {
		// Nobody to mail is a failure, not a delivery: the hub records it
		// on the request (notify_errors), where the operator sees that
		// this channel told no one. No retry can find an address.
		return fmt.Errorf("%w: no approver who may decide this request has a contact.email: nobody was emailed "+
			"(the request is on the dashboard and GET /approvals/pending)", channels.ErrPermanent)
	}
	did := channels.DeliveryID(ctx)
	type outgoing struct {
		key, addr, to string
		msg           []byte
	}
	var todo []outgoing
	for _, r := range rcpts {
		// By approver, not by address alone: approvers who share a
		// mailbox each need their own link (a link is bound to one key).
		key := did + "|" + r.key + "|" + r.addr
		c.mu.Lock()
		_, done := c.sent[key]
		c.mu.Unlock()
		if did != "" && done {
			continue
		}
		msg, err := c.message(req, r, event)
		if err != nil {
			return fmt.Errorf("%w: %v", channels.ErrPermanent, err)
		}
		// contact.email may carry a display name ("Team <a@b>"): the
		// envelope takes the address alone (message parsed it already).
		rcpt, err := mail.ParseAddress(r.addr)
		if err != nil {
			return fmt.Errorf("%w: contact.email %q: %v", channels.ErrPermanent, r.addr, err)
		}
		todo = append(todo, outgoing{key: key, addr: r.addr, to: rcpt.Address, msg: msg})
	}
	// Each recipient has its own SMTP transaction, a few at a time, each
	// bounded by ctx: one mailbox the relay stalls on (a recipient check
	// that hangs) takes its own transaction's time, not the others'. Sent
	// one after another, the first recipient used the whole attempt on
	// every retry and those after it were never mailed.
	errs := make([]error, len(todo))
	slots := make(chan struct{}, maxParallelSends)
	var wg sync.WaitGroup
	for i, o := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				errs[i] = fmt.Errorf("to %s: %w", o.addr, ctx.Err())
				return
			}
			if err := c.send(ctx, o.to, o.msg); err != nil {
				errs[i] = fmt.Errorf("to %s: %w", o.addr, err)
				return
			}
			if did != "" {
				c.markSent(o.key)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// maxParallelSends bounds the SMTP connections one delivery opens at once
// (relays limit connections per client).
const maxParallelSends = 4

// markSent remembers that key (delivery id|approver key|address) was
// mailed, so a retry of the delivery skips it; entries older than an hour
// are forgotten.
func (c *Channel) markSent(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.o.Now()
	for k, at := range c.sent {
		if now.Sub(at) > time.Hour {
			delete(c.sent, k)
		}
	}
	c.sent[key] = now
}

// send runs one SMTP transaction, bounded by ctx.
func (c *Channel) send(ctx context.Context, to string, msg []byte) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.cfg.SMTPAddr)
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	host, _, _ := net.SplitHostPort(c.cfg.SMTPAddr)
	cl, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return err
	}
	defer cl.Close()
	if err := cl.Hello(c.o.Hostname); err != nil {
		return err
	}
	if c.cfg.StartTLS {
		if ok, _ := cl.Extension("STARTTLS"); !ok {
			return fmt.Errorf("%w: starttls = true but %s does not offer STARTTLS", channels.ErrPermanent, c.cfg.SMTPAddr)
		}
		tc := c.o.TLSConfig
		if tc == nil {
			tc = &tls.Config{}
		}
		tc = tc.Clone()
		if tc.ServerName == "" {
			tc.ServerName = host
		}
		if err := cl.StartTLS(tc); err != nil {
			return err
		}
	}
	if c.cfg.UsernameEnv != "" {
		user, pass := c.o.Getenv(c.cfg.UsernameEnv), c.o.Getenv(c.cfg.PasswordEnv)
		if user == "" {
			return fmt.Errorf("%w: %s is not set", channels.ErrPermanent, c.cfg.UsernameEnv)
		}
		if err := cl.Auth(smtp.PlainAuth("", user, pass, host)); err != nil {
			return fmt.Errorf("smtp auth: %w", err)
		}
	}
	from, _ := mail.ParseAddress(c.cfg.From)
	if err := cl.Mail(from.Address); err != nil {
		return err
	}
	if err := cl.Rcpt(to); err != nil {
		return err
	}
	w, err := cl.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	// The server's 250 to the data (w.Close) is its acceptance: the
	// message is sent. A QUIT that fails after it unsends nothing, and
	// reporting a failure would have the hub mail the approver again.
	_ = cl.Quit()
	return nil
}

// message renders the MIME message (multipart/alternative: text, HTML).
func (c *Channel) message(req *approval.Request, r recipient, event string) ([]byte, error) {
	to, err := mail.ParseAddress(r.addr)
	if err != nil {
		return nil, fmt.Errorf("contact.email %q of %s: %v", r.addr, r.name, err)
	}
	to.Name = r.name
	v := newView(req, c.o.Now())
	v.Name = r.name
	v.Link = c.LinkURL(c.linkTo(req.ApprovalID, r.key, r.addr, time.Unix(req.ExpiresAt, 0)))
	v.Escalated = event == "approval.escalated"
	var buf bytes.Buffer
	if err := writeMIME(&buf, c.cfg.From, to.String(), subject(v), c.o.Hostname, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
