// Package email is the email channel ([channels.email]): one SMTP message per
// request to each trusted approver's contact.email, plain text and HTML,
// carrying a one-time, expiring, signed link PUBLIC_URL/email/a/{link}.
//
// The link names (approval id, approver key, expiry) and is authenticated by
// an HMAC-SHA256 under a secret kept in the data dir (email-link.key, 0600,
// created on first use). It is valid until the request's deadline.
//
//   - GET /email/a/{link} shows the request, read-only: mail scanners prefetch
//     links, so a GET never decides and never spends the link. Its button
//     opens the dashboard (/dashboard/#email={link}), where the approver signs
//     with their own key, in their browser. With Accept: application/json it
//     answers {request, approver, link_expires_at} (what that page reads).
//     It shows the request only while the link's approver is still one of
//     its approvers in the policy in force, with the contact.email the link
//     was mailed to (403 after a reload removed them or changed their
//     address: whoever reads the old mailbox is not who the policy mails).
//   - POST /email/a/{link} with {"token": <signed approval token>} decides:
//     the token must be signed by the link's approver for the link's request;
//     it goes through the kernel's one respond path (channel "email"), and the
//     link is spent on success. A spent or expired link answers 410, a forged
//     one 403, both with the API's error envelope. The body is read with a
//     size limit (MaxPostBody) and a deadline (Options.BodyReadTimeout).
//
// The message's Amount is the one the kernel derived from the arguments;
// failing that, the intent's max_amount marked "declared by the agent", as
// the dashboard and Slack show it.
//
// The link is a convenience, never a credential that decides: only the
// approver's signature does. Spent links are remembered in memory (a restart
// forgets them; the kernel still refuses a second vote by the same approver
// and any vote on a resolved request), and GET answers 410 once the link's
// approver has voted on its request, which the request records durably: a
// link spent before a restart does not show the request after it.
//
// Sending uses net/smtp: STARTTLS when `starttls = true` (required, never
// opportunistic), AUTH PLAIN with the credentials from username_env /
// password_env (net/smtp refuses to send them over a plaintext connection to
// anything but localhost).
package email

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/secretfile"
	"github.com/chiokernel/chio/policy"
)

// Name is the channel name used in policies and metrics.
const Name = "email"

// LinkPath is where links point and the handler is mounted.
const LinkPath = "/email/a/"

// SecretFile is the HMAC key's file name in the data dir.
const SecretFile = "email-link.key"

const linkDomain = "chio.email-link.v1"

// Options configure the channel beyond [channels.email].
type Options struct {
	// PublicURL is [kernel].public_url: links are PublicURL + "/email/a/…".
	PublicURL string
	// Policy returns the policy in force (approvers' contact.email). Required.
	Policy func() *policy.Policy
	// Secret is the link HMAC key (≥ 32 bytes). When nil it is read from, or
	// created in, DataDir/email-link.key.
	Secret  []byte
	DataDir string
	// TLSConfig for STARTTLS; nil verifies the server against the system
	// roots with the host of smtp_addr as its name.
	TLSConfig *tls.Config
	// Getenv reads the credentials' environment variables (default os.Getenv).
	Getenv func(string) string
	// Now is the clock for link expiry (default time.Now).
	Now func() time.Time
	// Hostname is sent in EHLO and Message-IDs (default "chio.localhost").
	Hostname string
	// BodyReadTimeout bounds reading a POST body (default
	// httpapi.BodyReadTimeout, as the API's own routes).
	BodyReadTimeout time.Duration
	// Current reads a request's stored state (chiod: the kernel's
	// Approval). A job carries the request as it was announced, and may
	// wait in the hub's queue or between retries while the request is
	// decided or voted on elsewhere: Deliver mails only what the stored
	// state still asks. Optional; when nil, or when the read fails, the
	// announced state is used (the kernel refuses any vote it no longer
	// takes, so a stale message misleads but decides nothing).
	Current func(approvalID string) (*approval.Request, error)
}

// Channel implements channels.Channel.
type Channel struct {
	cfg    policy.Email
	o      Options
	secret []byte

	mu    sync.Mutex
	sent  map[string]time.Time // delivery id|approver key|address → when, so retries resend only failures
	links map[string]linkState // spent or in-use links, by MAC
}

type linkState struct {
	used    bool // false: a POST is in flight
	expires time.Time
}

var _ channels.Channel = (*Channel)(nil)

// New checks the configuration and prepares the channel.
func New(cfg *policy.Email, o Options) (*Channel, error) {
	if cfg == nil || cfg.SMTPAddr == "" || cfg.From == "" {
		return nil, errors.New("email: smtp_addr and from are required")
	}
	if _, _, err := net.SplitHostPort(cfg.SMTPAddr); err != nil {
		return nil, fmt.Errorf("email: smtp_addr %q: %w", cfg.SMTPAddr, err)
	}
	if _, err := mail.ParseAddress(cfg.From); err != nil {
		return nil, fmt.Errorf("email: from %q: %w", cfg.From, err)
	}
	if o.Policy == nil {
		return nil, errors.New("email: Options.Policy is required")
	}
	if o.PublicURL == "" {
		return nil, errors.New("email: Options.PublicURL is required (links must reach chiod)")
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Hostname == "" {
		o.Hostname = "chio.localhost"
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = httpapi.BodyReadTimeout
	}
	if (cfg.UsernameEnv != "") != (cfg.PasswordEnv != "") {
		return nil, errors.New("email: set both username_env and password_env, or neither")
	}
	// Named secrets must be set now, as the other channels' are: a start
	// that succeeded would fail (or send an empty password for) every
	// message later.
	for _, env := range []string{cfg.UsernameEnv, cfg.PasswordEnv} {
		if env != "" && o.Getenv(env) == "" {
			return nil, fmt.Errorf("email: %s is not set", env)
		}
	}
	secret := o.Secret
	if secret == nil {
		if o.DataDir == "" {
			return nil, errors.New("email: Options.Secret or Options.DataDir is required")
		}
		var err error
		if secret, err = loadOrCreateSecret(filepath.Join(o.DataDir, SecretFile)); err != nil {
			return nil, err
		}
	}
	if len(secret) < 32 {
		return nil, errors.New("email: the link secret must be at least 32 bytes")
	}
	return &Channel{cfg: *cfg, o: o, secret: secret, sent: map[string]time.Time{}, links: map[string]linkState{}}, nil
}

// loadOrCreateSecret reads the link secret at path, creating it when it
// is missing. If another process creates it between the read and the
// create, it is read once more, and only once: a path that reads as
// missing yet cannot be created (a dangling symbolic link) is an error,
// not a loop.
func loadOrCreateSecret(path string) ([]byte, error) {
	s, err := loadSecret(path)
	if !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	s, err = createSecret(path)
	if !errors.Is(err, os.ErrExist) {
		return s, err
	}
	s, err = loadSecret(path) // another process won the race
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("email: %s exists but cannot be read (a dangling symbolic link?): "+
			"remove it to have chiod create a new link secret, or point it at the secret", path)
	}
	return s, err
}

// loadSecret reads the secret at path; a missing file is an error
// satisfying errors.Is(err, os.ErrNotExist).
func loadSecret(path string) ([]byte, error) {
	// The secret forges approval links: a file others may read is refused.
	b, err := secretfile.Read(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("email: %w", err)
	}
	s, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(s) < 32 {
		return nil, fmt.Errorf("email: %s is not a hex secret of ≥ 32 bytes", path)
	}
	return s, nil
}

// createSecret writes a new random secret to path, which must not exist
// (O_EXCL); when it does, the error satisfies errors.Is(err, os.ErrExist).
func createSecret(path string) ([]byte, error) {
	s := make([]byte, 32)
	if _, err := rand.Read(s); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, err
		}
		return nil, fmt.Errorf("email: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(s) + "\n")
	if err == nil {
		err = f.Sync() // its name is made durable at chiod's start (startfiles.go)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	return s, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// --- links ---

// linkClaims is what a link says; the MAC covers its encoding.
type linkClaims struct {
	ApprovalID string `json:"a"`
	Approver   string `json:"k"`
	Expires    int64  `json:"e"`
	Nonce      string `json:"n"`
	// To is addressTag of the contact.email the link was mailed to: the
	// link shows its request only while the policy in force still mails
	// its approver there (handler.go, mayStillDecide). "" in links minted
	// by Link, and by a chiod from before links named their address; such
	// a link is judged by its approver's key alone.
	To string `json:"m,omitempty"`
}

// addressTag names a contact.email in a link without writing the address
// into a URL: the first 16 bytes of SHA-256 over it, as the policy has it.
func addressTag(addr string) string {
	sum := sha256.Sum256([]byte(addr))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

func (c *Channel) mac(payload string) []byte {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(linkDomain))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Link mints the link token for (approval id, approver key, expiry).
func (c *Channel) Link(approvalID, approverKey string, expires time.Time) string {
	return c.linkTo(approvalID, approverKey, "", expires)
}

// linkTo is Link for a link mailed to addr (the approver's contact.email
// as the policy has it; "" names none).
func (c *Channel) linkTo(approvalID, approverKey, addr string, expires time.Time) string {
	var n [9]byte
	_, _ = rand.Read(n[:])
	cl := linkClaims{ApprovalID: approvalID, Approver: approverKey, Expires: expires.Unix(),
		Nonce: base64.RawURLEncoding.EncodeToString(n[:])}
	if addr != "" {
		cl.To = addressTag(addr)
	}
	b, _ := json.Marshal(cl)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(c.mac(payload))
}

// LinkURL is the full URL of a link.
func (c *Channel) LinkURL(link string) string { return c.o.PublicURL + LinkPath + link }

var (
	errBadLink     = errors.New("this link is not valid")
	errExpiredLink = errors.New("this link has expired")
	errUsedLink    = errors.New("this link was already used")
	errBusyLink    = errors.New("this link is being used right now")
	errVotedLink   = errors.New("this link's approver has already voted on this request")
)

// parseLink checks the MAC and expiry; id is the MAC, the link's identity.
func (c *Channel) parseLink(link string) (linkClaims, string, error) {
	var cl linkClaims
	if len(link) > 1024 {
		return cl, "", errBadLink
	}
	payload, sig, ok := strings.Cut(link, ".")
	if !ok {
		return cl, "", errBadLink
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac(payload)) {
		return cl, "", errBadLink
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil || json.Unmarshal(raw, &cl) != nil || cl.ApprovalID == "" || cl.Approver == "" {
		return cl, "", errBadLink
	}
	if !c.o.Now().Before(time.Unix(cl.Expires, 0)) {
		return cl, sig, errExpiredLink
	}
	c.mu.Lock()
	st, seen := c.links[sig]
	c.mu.Unlock()
	switch {
	case seen && st.used:
		return cl, sig, errUsedLink
	case seen:
		return cl, sig, errBusyLink
	}
	return cl, sig, nil
}

// reserve marks a link in use for one POST; release undoes it on failure,
// spend makes it permanent.
func (c *Channel) reserve(id string, expires time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.links[id]; ok {
		if st.used {
			return errUsedLink
		}
		return errBusyLink
	}
	now := c.o.Now()
	for k, st := range c.links { // forget links that expired anyway
		if now.After(st.expires) {
			delete(c.links, k)
		}
	}
	c.links[id] = linkState{expires: expires}
	return nil
}

func (c *Channel) release(id string) { c.mu.Lock(); delete(c.links, id); c.mu.Unlock() }

func (c *Channel) spend(id string) {
	c.mu.Lock()
	st := c.links[id]
	st.used = true
	c.links[id] = st
	c.mu.Unlock()
}

// --- delivery ---

// recipient is one approver reachable by email.
type recipient struct {
	key, name, addr string
}

// recipients are req's trusted approvers with an address who have not
// voted; voted counts those left out only because they have (the kernel
// refuses a second vote: "waiting for your decision" would be untrue).
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
		if ap.Contact.Email == "" || !req.Trusts(key) {
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
// When no trusted approver has an address it fails (permanently) rather
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
