// Package webhook is the webhook channel ([channels.webhook]): one signed
// JSON POST per notification.
//
// Body:
//
//	{"event": "approval.requested", "delivery": "<uuid v7>", "approval": <approval.Request>, "sent_at": <unix ms>}
//
// Headers:
//
//	Content-Type: application/json
//	X-Chio-Event: <event>
//	X-Chio-Delivery: <the body's delivery id>
//	X-Chio-Kernel-Key: ed25519:<hex>
//	X-Chio-Signature: <128 hex> = Ed25519(kernel key, "chio.webhook.v1" || 0x00 || body)
//	X-Chio-Webhook-Secret-Signature: sha256=<hex HMAC-SHA256(secret, body)>  (only with secret_env)
//
// The signature covers the body only, so what a receiver relies on is in
// the body: delivery is the same for every retry of one notification, and
// sent_at (the kernel's clock) changes per attempt, so the body and
// signature of a retry differ from the first attempt's. The headers repeat
// the event and delivery id for routing; they are not signed.
//
// Receivers call VerifyDelivery with the kernel key they pinned out of band
// (never the key in the header alone) and a freshness window: it checks the
// signature, refuses a sent_at outside ±maxAge, and returns the payload.
// They de-duplicate on its Delivery until the payload's FreshUntil(maxAge)
// (sent_at + maxAge, up to 2×maxAge after first seeing it when the
// receiver's clock is behind): a captured body replayed later is refused as
// stale, and within the window it carries the same signed delivery id
// whatever X-Chio-Delivery says. VerifySignature alone
// checks only the signature.
//
// A webhook only notifies: nothing it answers can approve a request.
// Answers: 2xx delivered; 3xx (redirects are not followed) and 4xx other
// than 408/429 are permanent failures; 5xx, 408, 429 and transport errors
// are retried by the hub.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/gofrs/uuid/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/jsonexact"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// Name is the channel name used in policies and metrics.
const Name = "webhook"

// Domain separates webhook signatures from every other kernel signature.
const Domain = "chio.webhook.v1"

// Header names.
const (
	HeaderEvent           = "X-Chio-Event"
	HeaderDelivery        = "X-Chio-Delivery"
	HeaderKernelKey       = "X-Chio-Kernel-Key"
	HeaderSignature       = "X-Chio-Signature"
	HeaderSecretSignature = "X-Chio-Webhook-Secret-Signature"
)

// Limits.
const (
	DefaultTimeout  = 10 * time.Second // per attempt
	MaxResponseBody = 64 << 10         // bytes of an answer read, at most
)

// Payload is the JSON body of a delivery.
type Payload struct {
	Event string `json:"event"`
	// Delivery identifies the notification: the same for every retry of
	// it, and signed with the body (X-Chio-Delivery repeats it, unsigned).
	Delivery string            `json:"delivery"`
	Approval *approval.Request `json:"approval"`
	SentAt   int64             `json:"sent_at"` // unix ms, on the kernel's clock
}

// Channel posts notifications to one URL. Safe for concurrent use.
type Channel struct {
	url       string
	sign      func(domain string, body []byte) []byte
	kernelKey string
	secret    []byte // nil without secret_env
	attempts  int
	client    *http.Client
	now       func() time.Time
}

var _ channels.Channel = (*Channel)(nil)
var _ channels.AttemptLimiter = (*Channel)(nil)

// Option adjusts a Channel (tests mostly).
type Option func(*Channel)

// WithTimeout sets the per-attempt timeout (default 10s).
func WithTimeout(d time.Duration) Option {
	return func(c *Channel) {
		if d > 0 {
			c.client.Timeout = d
		}
	}
}

// WithTransport sets the HTTP transport (default: a clone of
// http.DefaultTransport).
func WithTransport(rt http.RoundTripper) Option {
	return func(c *Channel) {
		if rt != nil {
			c.client.Transport = rt
		}
	}
}

// WithClock sets the clock used for sent_at.
func WithClock(now func() time.Time) Option {
	return func(c *Channel) {
		if now != nil {
			c.now = now
		}
	}
}

// New builds the channel. signer is kernel.SignAsKernel; kernelKey is the
// kernel's public key in text form. It fails closed: a bad URL, a missing
// signer, a malformed key, or a secret_env naming an unset, empty or
// malformed variable (channels.CheckSecret) is an error at start, never a
// silently unsigned delivery.
func New(cfg policy.Webhook, signer func(domain string, body []byte) []byte, kernelKey string, opts ...Option) (*Channel, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook: url must be an absolute http(s) URL")
	}
	if signer == nil {
		return nil, errors.New("webhook: no signer")
	}
	if _, err := keys.ParsePublicKey(kernelKey); err != nil {
		return nil, fmt.Errorf("webhook: kernel key: %w", err)
	}
	if cfg.Retries < 0 {
		return nil, fmt.Errorf("webhook: retries = %d, want ≥ 0", cfg.Retries)
	}
	c := &Channel{
		url: cfg.URL, sign: signer, kernelKey: kernelKey, attempts: cfg.Retries + 1, now: time.Now,
		client: &http.Client{
			Timeout:   DefaultTimeout,
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// Never follow: a redirect could carry the signed body elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	if cfg.SecretEnv != "" {
		v, ok := os.LookupEnv(cfg.SecretEnv)
		if !ok || v == "" {
			return nil, fmt.Errorf("webhook: secret_env %s is not set", cfg.SecretEnv)
		}
		// A short secret could be guessed from one delivery, and then
		// anyone could sign as the kernel for a receiver that checks it.
		if err := channels.CheckSecret(cfg.SecretEnv, v, channels.MinSecretBytes); err != nil {
			return nil, fmt.Errorf("webhook: secret_env %w", err)
		}
		c.secret = []byte(v)
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// MaxAttempts implements channels.AttemptLimiter: retries + 1.
func (c *Channel) MaxAttempts() int { return c.attempts }

// Deliver makes one POST. The delivery id comes from ctx
// (channels.WithDeliveryID); without one a fresh id is used.
func (c *Channel) Deliver(ctx context.Context, event string, req *approval.Request) error {
	id := channels.DeliveryID(ctx)
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("delivery id: %w", err)
		}
		id = u.String()
	}
	// The bytes the tool receives, not \u003c escapes: the signature covers them.
	body, err := jsonexact.Marshal(Payload{Event: event, Delivery: id, Approval: req, SentAt: c.now().UnixMilli()})
	if err != nil {
		return fmt.Errorf("%w: encode: %v", channels.ErrPermanent, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", channels.ErrPermanent, err)
	}
	h := hreq.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "chio-webhook/1")
	h.Set(HeaderEvent, event)
	h.Set(HeaderDelivery, id)
	h.Set(HeaderKernelKey, c.kernelKey)
	h.Set(HeaderSignature, hex.EncodeToString(c.sign(Domain, body)))
	if c.secret != nil {
		h.Set(HeaderSecretSignature, SecretSignature(c.secret, body))
	}

	resp, err := c.client.Do(hreq)
	if err != nil {
		// url.Error repeats the URL, which may hold a token: keep the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("POST: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
	// The status line's reason phrase is the receiver's text, like its
	// body: recorded printable and bounded, never as sent.
	status := printable(resp.Status, 100)
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code >= 500, code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return fmt.Errorf("receiver answered %s%s", status, excerpt(answer))
	case code >= 300 && code < 400:
		return fmt.Errorf("%w: receiver answered %s (redirects are not followed)", channels.ErrPermanent, status)
	default:
		return fmt.Errorf("%w: receiver answered %s%s", channels.ErrPermanent, status, excerpt(answer))
	}
}

// SecretSignature is the X-Chio-Webhook-Secret-Signature value for body.
func SecretSignature(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// excerpt is a short, printable start of a receiver's answer for the
// failure recorded on the request.
func excerpt(b []byte) string {
	s := printable(string(b), 200)
	if s == "" {
		return ""
	}
	return ": " + s
}

// printable is s from a receiver, trimmed, with invalid UTF-8 as "?" and
// every unprintable character (controls, terminal escapes, bidi
// overrides) as a space, cut to limit bytes at a rune boundary.
func printable(s string, limit int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "?"))
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}
