package kernel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
)

// CallProofSchema is the signature domain of an agent's call proof.
const CallProofSchema = "chio.call.v1"

// ToolCall is what an agent submits (SPEC §3).
type ToolCall struct {
	RequestID      string          `json:"request_id"`
	Capability     json.RawMessage `json:"capability"`
	Server         string          `json:"server"`
	Tool           string          `json:"tool"`
	Operation      string          `json:"operation,omitempty"`
	Arguments      json.RawMessage `json:"arguments"`
	GovernedIntent json.RawMessage `json:"governed_intent,omitempty"`
	Proof          Proof           `json:"proof"`
}

// Proof is the agent's signature over the call's identity.
type Proof struct {
	IssuedAt  int64  `json:"issued_at"`
	Signature string `json:"signature"`
}

// GovernedIntent is the agent's declared purpose and monetary envelope.
type GovernedIntent struct {
	Purpose        string          `json:"purpose"`
	MaxAmount      *Amount         `json:"max_amount,omitempty"`
	ActionCategory string          `json:"action_category,omitempty"`
	Context        json.RawMessage `json:"context,omitempty"`
}

// Amount is money in minor units.
type Amount struct {
	Units    int64  `json:"units"`
	Currency string `json:"currency"`
}

// Call errors (input problems, answered without a receipt).
var (
	ErrBadCall     = errors.New("malformed call")
	ErrBadProof    = errors.New("invalid call proof")
	ErrStaleProof  = errors.New("stale call proof")
	ErrRequestUsed = errors.New("request_id already used for a different call")
)

// ParameterHash is SPEC §2's binding of a call's content: SHA-256 hex of
// JCS({server_id, tool_name, arguments, governed_intent}).
func ParameterHash(server, tool string, arguments, intent json.RawMessage) (string, error) {
	if len(intent) == 0 {
		intent = json.RawMessage("null")
	}
	if len(arguments) == 0 {
		arguments = json.RawMessage("{}")
	}
	c, err := canon.Marshal(map[string]any{
		"server_id": server, "tool_name": tool, "arguments": arguments, "governed_intent": intent,
	})
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadCall, err)
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// canonicalParameterHash is ParameterHash for arguments and intent that are
// already canonical (authenticate canonicalizes them first): the object's
// members are written directly in JCS order (arguments, governed_intent,
// server_id, tool_name) instead of being re-parsed. call_test.go checks it
// against ParameterHash.
func canonicalParameterHash(server, tool string, arguments, intent json.RawMessage) (string, error) {
	if len(intent) == 0 {
		intent = json.RawMessage("null")
	}
	if !utf8.ValidString(server) || !utf8.ValidString(tool) {
		return "", fmt.Errorf("%w: invalid UTF-8", ErrBadCall)
	}
	b := make([]byte, 0, len(arguments)+len(intent)+len(server)+len(tool)+64)
	b = append(b, `{"arguments":`...)
	b = append(b, arguments...)
	b = append(b, `,"governed_intent":`...)
	b = append(b, intent...)
	b = append(b, `,"server_id":`...)
	b, _ = jsontext.AppendQuote(b, server)
	b = append(b, `,"tool_name":`...)
	b, _ = jsontext.AppendQuote(b, tool)
	sum := sha256.Sum256(append(b, '}'))
	return hashText(sum), nil
}

// hashText is hex.EncodeToString(sum[:]) in one allocation.
func hashText(sum [sha256.Size]byte) string {
	var buf [2 * sha256.Size]byte
	hex.Encode(buf[:], sum[:])
	return string(buf[:])
}

// proofPayload is exactly the object the agent signs, in RFC 8785 form,
// written directly: its members are fixed and already in JCS order, strings
// use jsontext's RFC 8785 minimal escaping. (call_test.go checks it against
// the generic canonicalizer.)
func proofPayload(requestID, capabilityID, server, tool, paramHash string, issuedAt int64) ([]byte, error) {
	return appendProofPayload(make([]byte, 0, 256), requestID, capabilityID, server, tool, paramHash, issuedAt)
}

// proofMessage is the byte string a call proof signs,
// signed.Message(CallProofSchema, proofPayload(...)), written in one
// buffer instead of the payload and then a copy of it.
func proofMessage(requestID, capabilityID, server, tool, paramHash string, issuedAt int64) ([]byte, error) {
	b := make([]byte, 0, len(CallProofSchema)+1+256)
	b = append(b, CallProofSchema...)
	return appendProofPayload(append(b, 0), requestID, capabilityID, server, tool, paramHash, issuedAt)
}

// appendProofPayload appends proofPayload's object to b.
func appendProofPayload(b []byte, requestID, capabilityID, server, tool, paramHash string, issuedAt int64) ([]byte, error) {
	if issuedAt > 1<<53 || issuedAt < -(1<<53) {
		return nil, fmt.Errorf("%w: issued_at out of range", ErrBadProof)
	}
	for _, s := range []string{requestID, capabilityID, server, tool, paramHash} {
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%w: invalid UTF-8", ErrBadCall)
		}
	}
	b = append(b, `{"capability_id":`...)
	b, _ = jsontext.AppendQuote(b, capabilityID)
	b = append(b, `,"issued_at":`...)
	b = strconv.AppendInt(b, issuedAt, 10)
	b = append(b, `,"parameter_hash":`...)
	b, _ = jsontext.AppendQuote(b, paramHash)
	b = append(b, `,"request_id":`...)
	b, _ = jsontext.AppendQuote(b, requestID)
	b = append(b, `,"server":`...)
	b, _ = jsontext.AppendQuote(b, server)
	b = append(b, `,"tool":`...)
	b, _ = jsontext.AppendQuote(b, tool)
	return append(b, '}'), nil
}

// SignProof produces the agent's proof for a call (used by the SDK and CLI).
func SignProof(agent keys.PrivateKey, requestID, capabilityID, server, tool, paramHash string, at time.Time) (Proof, error) {
	msg, err := proofMessage(requestID, capabilityID, server, tool, paramHash, at.Unix())
	if err != nil {
		return Proof{}, err
	}
	sig := agent.SignRaw(msg)
	return Proof{IssuedAt: at.Unix(), Signature: hex.EncodeToString(sig)}, nil
}

// VerifyProof checks the agent's proof at reference time ref.
func VerifyProof(subject keys.PublicKey, p Proof, requestID, capabilityID, server, tool, paramHash string, ref time.Time) error {
	return verifyProof(newVerifyKey(subject), p, requestID, capabilityID, server, tool, paramHash, ref)
}

// verifyProof is VerifyProof with the subject's precomputed key.
func verifyProof(subject verifyKey, p Proof, requestID, capabilityID, server, tool, paramHash string, ref time.Time) error {
	skew := ref.Sub(time.Unix(p.IssuedAt, 0))
	if skew > MaxProofSkew || skew < -MaxProofSkew {
		return fmt.Errorf("%w: issued_at %d is %s from now (max %s)", ErrStaleProof, p.IssuedAt, skew.Round(time.Second), MaxProofSkew)
	}
	if len(p.Signature) != 128 || strings.ToLower(p.Signature) != p.Signature {
		return fmt.Errorf("%w: signature must be 128 lowercase hex", ErrBadProof)
	}
	sig, err := hex.DecodeString(p.Signature)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadProof, err)
	}
	msg, err := proofMessage(requestID, capabilityID, server, tool, paramHash, p.IssuedAt)
	if err != nil {
		return err
	}
	if !subject.verify(msg, sig) {
		return fmt.Errorf("%w: signature does not verify", ErrBadProof)
	}
	return nil
}

// validRequestID keeps request ids printable and bounded: they key the
// store, travel in headers and URL paths (approval.ValidID: never "." or
// "..", which a router redirects away, so a call's status stays readable).
// "ar-" is reserved for approval ids: tools that take either kind of id
// (chio await, the SDK's Await) tell them apart by it.
func validRequestID(id string) bool {
	return approval.ValidID(id) && !strings.HasPrefix(id, "ar-")
}

// parseIntent strictly decodes a governed intent (nil when absent). The
// strings in it are shown to approvers (and every live view replays them),
// so each has a cap and holds no control or format characters; the
// parameter hash covers them, so an over-long or unprintable value is
// refused, never truncated or cleaned.
func parseIntent(raw json.RawMessage) (*GovernedIntent, error) {
	gi, err := decodeIntent(raw)
	if err != nil || gi == nil {
		return gi, err
	}
	// Approvers read these strings as text (the purpose and currency are in
	// the one-line summary): no control or format characters in them, nor
	// in the context's strings (shown_text.go).
	if err := checkShownText("governed_intent.purpose", gi.Purpose); err != nil {
		return nil, err
	}
	if err := checkShownName("governed_intent.action_category", gi.ActionCategory); err != nil {
		return nil, err
	}
	if gi.MaxAmount != nil {
		if err := checkShownName("governed_intent.max_amount.currency", gi.MaxAmount.Currency); err != nil {
			return nil, err
		}
	}
	if len(gi.Context) > 0 {
		if err := checkShownJSON("governed_intent.context", gi.Context); err != nil {
			return nil, err
		}
	}
	return gi, nil
}

// decodeIntent is parseIntent's shape rules alone: for an intent already
// stored with a parked call, which met the text rules in force when it was
// parked (a request parked before they were added must still resume with
// its intent, not without one).
func decodeIntent(raw json.RawMessage) (*GovernedIntent, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > MaxIntentBytes {
		return nil, fmt.Errorf("%w: governed_intent is %d bytes; the limit is %d", ErrBadCall, len(raw), MaxIntentBytes)
	}
	var gi GovernedIntent
	if err := canon.Unmarshal(raw, &gi); err != nil {
		return nil, fmt.Errorf("%w: governed_intent: %v", ErrBadCall, err)
	}
	switch {
	case len(gi.Purpose) > MaxPurposeLen:
		return nil, fmt.Errorf("%w: governed_intent.purpose is %d bytes; the limit is %d", ErrBadCall, len(gi.Purpose), MaxPurposeLen)
	case len(gi.ActionCategory) > MaxActionCategoryLen:
		return nil, fmt.Errorf("%w: governed_intent.action_category is %d bytes; the limit is %d", ErrBadCall, len(gi.ActionCategory), MaxActionCategoryLen)
	case len(gi.Context) > MaxIntentContextBytes:
		return nil, fmt.Errorf("%w: governed_intent.context is %d bytes; the limit is %d", ErrBadCall, len(gi.Context), MaxIntentContextBytes)
	}
	if gi.MaxAmount != nil && (gi.MaxAmount.Units < 0 || gi.MaxAmount.Currency == "") {
		return nil, fmt.Errorf("%w: governed_intent.max_amount needs units ≥ 0 and a currency", ErrBadCall)
	}
	return &gi, nil
}
