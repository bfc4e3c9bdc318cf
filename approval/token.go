package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// Schemas (and signature domains).
const (
	TokenSchema = "chio.approval-token.v1"
	BatchSchema = "chio.batch-approval.v1"
)

// Decisions a token can carry.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
)

// Token is SPEC §3's GovernedApprovalToken: one human decision bound to one
// request, one call content, one agent, one approver and a time window.
type Token struct {
	Schema             string          `json:"schema"`
	ID                 string          `json:"id"`
	Approver           string          `json:"approver"`
	Subject            string          `json:"subject"`
	GovernedIntentHash string          `json:"governed_intent_hash"`
	RequestID          string          `json:"request_id"`
	IssuedAt           int64           `json:"issued_at"`
	ExpiresAt          int64           `json:"expires_at"`
	Decision           string          `json:"decision"`
	Note               string          `json:"note,omitempty"`
	AmendedArguments   json.RawMessage `json:"amended_arguments,omitempty"`
	Answers            json.RawMessage `json:"answers,omitempty"`
	Signature          string          `json:"signature,omitempty"`
}

// NewToken fills a token for req (the approver's side; the SDK, CLI and
// dashboard all build tokens this way). ttl is capped by MaxApprovalTTL.
func NewToken(req *Request, approver keys.PublicKey, decision string, now time.Time, ttl time.Duration) *Token {
	if ttl <= 0 || ttl > MaxApprovalTTL {
		ttl = MaxApprovalTTL
	}
	return &Token{
		Schema: TokenSchema, ID: newID("at-"), Approver: approver.String(), Subject: req.SubjectID,
		GovernedIntentHash: req.ParameterHash, RequestID: req.ApprovalID,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix(), Decision: decision,
	}
}

// Sign signs t with the approver's key and returns the bytes to send. A
// token over MaxTokenBytes, which the kernel refuses unread, is refused
// here (its answers or amended arguments, each within its own limit, can
// add up to one), so that no signer sends it.
func (t *Token) Sign(k keys.PrivateKey) ([]byte, error) {
	t.Signature = ""
	raw, err := signed.Sign(k, TokenSchema, t)
	if err == nil && len(raw) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: the signed decision would be %d bytes, over chio's %d: shorten the answers, note or amended arguments",
			ErrTokenTooLarge, len(raw), MaxTokenBytes)
	}
	return raw, err
}

// ErrTokenTooLarge is a decision whose signed token would be over
// MaxTokenBytes.
var ErrTokenTooLarge = errors.New("approval token too large")

// BatchToken is SPEC §3's BatchApprovalToken: a standing approval, plus
// Audience (a deviation from SPEC, see docs/ARCHITECTURE.md): the public
// key of the kernel it is meant for, in receipts' kernel_key encoding.
// The token is presented with no credential but its signature, and an
// approver uses one key at every deployment; without an audience a token
// made for staging would create the same standing approval at production.
// Audience is empty only in batches stored before it was required.
type BatchToken struct {
	Schema           string  `json:"schema"`
	ID               string  `json:"id"`
	Approver         string  `json:"approver"`
	Audience         string  `json:"audience,omitempty"`
	Subject          string  `json:"subject,omitempty"`
	ServerPattern    string  `json:"server_pattern"`
	ToolPattern      string  `json:"tool_pattern"`
	MaxCalls         *int64  `json:"max_calls,omitempty"`
	MaxAmountPerCall *Amount `json:"max_amount_per_call,omitempty"`
	MaxTotalAmount   *Amount `json:"max_total_amount,omitempty"`
	NotBefore        int64   `json:"not_before"`
	NotAfter         int64   `json:"not_after"`
	Signature        string  `json:"signature,omitempty"`
}

// Amount is money in minor units.
type Amount struct {
	Units    int64  `json:"units"`
	Currency string `json:"currency"`
}

// Sign signs b with the approver's key.
func (b *BatchToken) Sign(k keys.PrivateKey) ([]byte, error) {
	b.Signature = ""
	return signed.Sign(k, BatchSchema, b)
}
