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
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/httpapi"
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

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }
