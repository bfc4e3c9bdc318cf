package toolserver

// Telling chio's calls from anyone else's.
//
// chiod signs every call it sends to an http tool server with its kernel
// key (X-Chio-Server, X-Chio-Sent-At, X-Chio-Signature; see
// internal/signed/toolcall.go for the exact message). A tool server that
// anything but chiod can reach must check it: a call that did not come
// through chio skipped every guard, approval and receipt. Verifier does,
// before the handler (and before Dedupe, so an unsigned body can neither
// run nor claim an Idempotency-Key):
//
//	v, err := toolserver.NewVerifier("ed25519:…kernel key…", "payments")
//	http.Handle("/chio", v.Wrap(dedupe.Wrap(paymentsHandler)))

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// DefaultMaxAge is how far a call's X-Chio-Sent-At may be from the tool
// server's clock, either way (chiod stamps each attempt afresh).
const DefaultMaxAge = 5 * time.Minute

// ErrNotFromChio is Verify's refusal of a call chio did not send to this
// server: no or a malformed signature, one that does not verify under the
// pinned kernel key, another server's id, an Idempotency-Key other than the
// body's signed request_id, or a sent_at outside MaxAge.
var ErrNotFromChio = errors.New("not a call chio sent to this tool server")

// Verifier checks that calls were signed by one chio kernel for one server.
type Verifier struct {
	kernel keys.PublicKey
	server string
	// MaxAge bounds |now - X-Chio-Sent-At| (NewVerifier sets
	// DefaultMaxAge). A call repeated within it is the same call (same
	// Idempotency-Key): use Dedupe so that it does not run twice. Zero or
	// less is no bound: Verify then refuses every call, saying so, as the
	// Python and TypeScript verifiers refuse such a max_age / maxAgeMs.
	MaxAge time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// NewVerifier pins the kernel key (as `chio` prints it: "ed25519:…"; GET
// /healthz on chiod names it as kernel_key) and this server's id in
// chio's policy ([[servers]] id).
func NewVerifier(kernelKey, serverID string) (*Verifier, error) {
	k, err := keys.ParsePublicKey(kernelKey)
	if err != nil {
		return nil, fmt.Errorf("toolserver: kernel key: %w", err)
	}
	if serverID == "" {
		return nil, errors.New("toolserver: a server id is required (the [[servers]] id chio routes to this server)")
	}
	return &Verifier{kernel: k, server: serverID, MaxAge: DefaultMaxAge}, nil
}

// Verify checks a call as it arrived: its headers and its exact body bytes.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	if v.MaxAge <= 0 {
		// A misconfigured verifier, not a call to judge: never a
		// default window the caller did not choose.
		return fmt.Errorf("toolserver: Verifier.MaxAge %s must be positive (NewVerifier sets DefaultMaxAge)", v.MaxAge)
	}
	if got := h.Get(signed.ToolCallServerHeader); got != v.server {
		return fmt.Errorf("%w: %s is %q, want %q", ErrNotFromChio, signed.ToolCallServerHeader, clipHeader(got), v.server)
	}
	// Exactly the decimal chiod signs (strconv.FormatInt): ParseInt alone
	// also reads "+5", "05" and "-0", which the Python and TypeScript
	// verifiers refuse (testdata/sdk/tool_call_sent_at.json).
	rawSentAt := h.Get(signed.ToolCallSentAtHeader)
	sentAt, err := strconv.ParseInt(rawSentAt, 10, 64)
	if err != nil || strconv.FormatInt(sentAt, 10) != rawSentAt {
		return fmt.Errorf("%w: %s must be unix milliseconds", ErrNotFromChio, signed.ToolCallSentAtHeader)
	}
	sigHex := h.Get(signed.ToolCallSignatureHeader)
	sig, err := hex.DecodeString(sigHex)
	if err != nil || len(sig) != ed25519.SignatureSize || hex.EncodeToString(sig) != sigHex {
		return fmt.Errorf("%w: %s must be %d lowercase hex digits", ErrNotFromChio, signed.ToolCallSignatureHeader, 2*ed25519.SignatureSize)
	}
	msg := signed.Message(signed.ToolCallDomain, signed.ToolCallMessage(v.server, sentAt, body))
	if !ed25519.Verify(v.kernel.Ed25519(), msg, sig) {
		return fmt.Errorf("%w: the signature does not verify under kernel key %s", ErrNotFromChio, v.kernel)
	}
	// The signature covers the body, not the Idempotency-Key header that
	// Dedupe keys on: a delivery captured on its way here, sent again
	// within MaxAge under another key, would verify and run again. chiod
	// sends the call's request id as both, so the key must be the body's
	// signed request_id.
	var call struct {
		RequestID *string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &call); err != nil || call.RequestID == nil {
		return fmt.Errorf("%w: the body is not a call with a request_id", ErrNotFromChio)
	}
	if got := h.Get(IdempotencyKeyHeader); got != *call.RequestID {
		return fmt.Errorf("%w: %s is %q, not the signed request_id %q", ErrNotFromChio, IdempotencyKeyHeader, clipHeader(got), clipHeader(*call.RequestID))
	}
	// Freshness after the signature: an unsigned time says nothing.
	maxAge := v.MaxAge
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if d := now().Sub(time.UnixMilli(sentAt)); d > maxAge || d < -maxAge {
		return fmt.Errorf("%w: sent %s from this server's clock, more than %s", ErrNotFromChio, d.Round(time.Second), maxAge)
	}
	return nil
}

// Wrap refuses, with 401, every request Verify refuses, and hands the
// others to h with their body intact. The body is read up to
// MaxRequestBytes first (413 beyond).
func (v *Verifier) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		if err != nil {
			httpError(w, http.StatusRequestEntityTooLarge, "request body too large or unreadable")
			return
		}
		if err := v.Verify(r.Header, body); err != nil {
			httpError(w, http.StatusUnauthorized, err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// clipHeader keeps a refused header's echo short.
func clipHeader(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
