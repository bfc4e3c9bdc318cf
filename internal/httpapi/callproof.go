package httpapi

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// The Chio-Proof header lets an agent read the state of its own call (and
// of the approval request that parks it) without a bearer token: it signs
// the id it asks about and the time, with the key its capability names.
const (
	StatusProofHeader = "Chio-Proof"
	// StatusProofSchema is the signature domain; it differs from the call
	// proof's so that neither signature can stand in for the other.
	StatusProofSchema = "chio.call-status.v1"
	// MaxStatusProofSkew is how far issued_at may sit from the server's now.
	MaxStatusProofSkew = 60 * time.Second
	// maxStatusProofLen: up to 19 digits, a dot and 128 hex.
	maxStatusProofLen = 19 + 1 + 2*ed25519.SignatureSize
)

// ErrStatusProof is every reason a Chio-Proof header is refused.
var ErrStatusProof = errors.New("invalid Chio-Proof")

func statusProofMessage(requestID string, issuedAt int64) ([]byte, error) {
	payload, err := canon.Marshal(map[string]any{"request_id": requestID, "issued_at": issuedAt})
	if err != nil {
		return nil, err
	}
	return signed.Message(StatusProofSchema, payload), nil
}

// SignStatusProof returns the Chio-Proof header value by which the agent
// holding key asks about requestID at time at. The value is replayable for
// MaxStatusProofSkew but only for reading that one id: send it over TLS.
func SignStatusProof(key keys.PrivateKey, requestID string, at time.Time) string {
	msg, err := statusProofMessage(requestID, at.Unix())
	if err != nil {
		return "" // cannot happen for a string and an int; "" never verifies
	}
	return strconv.FormatInt(at.Unix(), 10) + "." + hex.EncodeToString(key.SignRaw(msg))
}

// VerifyStatusProof checks a Chio-Proof header value: `<issued_at>.<128
// lowercase hex>`, issued_at (unix seconds, no sign, no leading zeros)
// within MaxStatusProofSkew of now, and an Ed25519 signature by subject over
// "chio.call-status.v1" || 0x00 || JCS({"request_id","issued_at"}).
func VerifyStatusProof(header string, subject keys.PublicKey, requestID string, now time.Time) error {
	return verifyHeaderProof(header, subject, now, func(at int64) ([]byte, error) { return statusProofMessage(requestID, at) })
}

// verifyHeaderProof is the one check behind every Chio-Proof header (read
// and cancel proofs differ only in the message signed): shape, time window,
// then the signature over message(issued_at) by subject.
func verifyHeaderProof(header string, subject keys.PublicKey, now time.Time, message func(issuedAt int64) ([]byte, error)) error {
	if len(header) > maxStatusProofLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrStatusProof, maxStatusProofLen)
	}
	ts, sigHex, ok := strings.Cut(header, ".")
	if !ok || !decimal(ts) {
		return fmt.Errorf("%w: want <issued_at>.<signature hex>", ErrStatusProof)
	}
	at, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: issued_at: %v", ErrStatusProof, err)
	}
	if skew := now.Sub(time.Unix(at, 0)); skew > MaxStatusProofSkew || skew < -MaxStatusProofSkew {
		return fmt.Errorf("%w: issued_at %d is %s from now (max %s)", ErrStatusProof, at, skew.Round(time.Second), MaxStatusProofSkew)
	}
	if len(sigHex) != 2*ed25519.SignatureSize || strings.ToLower(sigHex) != sigHex {
		return fmt.Errorf("%w: signature must be 128 lowercase hex", ErrStatusProof)
	}
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		return fmt.Errorf("%w: signature: %v", ErrStatusProof, err)
	}
	msg, err := message(at)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStatusProof, err)
	}
	if subject.IsZero() || !ed25519.Verify(subject.Ed25519(), msg, sig) {
		return fmt.Errorf("%w: signature does not verify for this id and key", ErrStatusProof)
	}
	return nil
}

// decimal accepts one canonical spelling of a non-negative integer, so a
// header has exactly one text form per proof.
func decimal(s string) bool {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// agentView is req as its agent reads it: without the channels' delivery
// failures, which are for approvers and operators (they name approvers'
// email addresses, the mail relay, what a webhook receiver answered).
func agentView(req *approval.Request) *approval.Request {
	v := *req
	v.NotifyErrors = nil
	return &v
}
