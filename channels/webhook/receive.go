package webhook

// The receiver's side: checking that a delivery is the kernel's, fresh, and
// which notification it is. A receiver needs only this file's functions and
// the kernel key it pinned.

import (
	"crypto/ed25519"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// ErrBadSignature is the refusal of a delivery whose signature does not
// verify.
var ErrBadSignature = errors.New("webhook signature does not verify")

// ErrStaleDelivery is VerifyDelivery's refusal of a genuine delivery whose
// sent_at is outside the receiver's window: a replay, or clocks too far
// apart.
var ErrStaleDelivery = errors.New("webhook delivery is not fresh")

// ErrBadDelivery is the refusal of a signed body that is not a delivery
// (no event or delivery id).
var ErrBadDelivery = errors.New("webhook delivery is malformed")

// ParseKernelKey parses the kernel key a receiver pins, as chiod logs it at
// start and GET /healthz names it ("ed25519:…"), for VerifyDelivery and
// VerifySignature. The key's type is chio's internal one: code outside this
// module cannot name it, so this is how a receiver gets one.
func ParseKernelKey(s string) (keys.PublicKey, error) { return keys.ParsePublicKey(s) }

// VerifyDelivery checks a delivery as a receiver gets it — the exact body
// bytes and the X-Chio-Signature header — against the kernel key the
// receiver pinned, and returns its payload. It refuses a bad signature
// (ErrBadSignature), a sent_at more than maxAge from now either way
// (ErrStaleDelivery), and a body without an event or a delivery id
// (ErrBadDelivery). maxAge must be positive; a few minutes suits most
// receivers (sent_at is set per attempt, so retries stay fresh).
//
// Receivers de-duplicate on the returned Delivery, which is signed and the
// same for every retry of a notification, remembering each id until the
// payload's FreshUntil(maxAge): anything later is refused here. That is up
// to 2×maxAge after first seeing it, not maxAge: a body whose sent_at is
// ahead of the receiver's clock is fresh from its arrival until sent_at +
// maxAge. X-Chio-Delivery is a copy for routing and is not signed.
func VerifyDelivery(body []byte, sigHex string, kernelKey keys.PublicKey, now time.Time, maxAge time.Duration) (*Payload, error) {
	if err := VerifySignature(body, sigHex, kernelKey); err != nil {
		return nil, err
	}
	return freshPayload(body, now, maxAge)
}

// FreshUntil is the last instant at which VerifyDelivery (or
// VerifySecretDelivery) with this maxAge accepts p's body: its sent_at +
// maxAge. A receiver remembers p.Delivery until then to refuse replays.
func (p *Payload) FreshUntil(maxAge time.Duration) time.Time {
	return time.UnixMilli(p.SentAt).Add(maxAge)
}

// VerifySecretDelivery is VerifyDelivery for receivers that check the
// X-Chio-Webhook-Secret-Signature (shared secret) instead of Ed25519.
func VerifySecretDelivery(body []byte, header string, secret []byte, now time.Time, maxAge time.Duration) (*Payload, error) {
	if err := VerifySecretSignature(body, header, secret); err != nil {
		return nil, err
	}
	return freshPayload(body, now, maxAge)
}

// freshPayload parses a body whose signature has verified and checks its
// freshness.
func freshPayload(body []byte, now time.Time, maxAge time.Duration) (*Payload, error) {
	if maxAge <= 0 {
		return nil, fmt.Errorf("%w: maxAge must be positive, not %s", ErrStaleDelivery, maxAge)
	}
	var p Payload
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDelivery, err)
	}
	if p.Event == "" || p.Delivery == "" {
		return nil, fmt.Errorf("%w: no event or delivery id", ErrBadDelivery)
	}
	sent := time.UnixMilli(p.SentAt)
	if age := now.Sub(sent); age > maxAge || age < -maxAge {
		return nil, fmt.Errorf("%w: sent_at %s is %s from now (max %s)", ErrStaleDelivery, sent.UTC().Format(time.RFC3339), age.Round(time.Second), maxAge)
	}
	return &p, nil
}

// VerifySignature checks an X-Chio-Signature header value over the exact
// body bytes received, against the kernel key the receiver trusts. It does
// not check freshness: VerifyDelivery does both.
func VerifySignature(body []byte, sigHex string, kernelKey keys.PublicKey) error {
	if kernelKey.IsZero() {
		return fmt.Errorf("%w: no kernel key", ErrBadSignature)
	}
	if len(sigHex) != 2*ed25519.SignatureSize || strings.ToLower(sigHex) != sigHex {
		return fmt.Errorf("%w: want %d lowercase hex digits", ErrBadSignature, 2*ed25519.SignatureSize)
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil || !ed25519.Verify(kernelKey.Ed25519(), signed.Message(Domain, body), sig) {
		return ErrBadSignature
	}
	return nil
}

// VerifySecretSignature checks an X-Chio-Webhook-Secret-Signature header in
// constant time, for receivers that use the shared secret instead of
// Ed25519. It does not check freshness: VerifySecretDelivery does both.
func VerifySecretSignature(body []byte, header string, secret []byte) error {
	if len(secret) == 0 || !hmac.Equal([]byte(header), []byte(SecretSignature(secret, body))) {
		return ErrBadSignature
	}
	return nil
}
