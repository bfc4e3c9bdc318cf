package approval

import (
	"errors"
	"fmt"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// Rejection reasons. Every one is a stable sentinel; the HTTP layer maps
// them to 403 approval_rejected (ErrReplay to 409 replay_detected).
var (
	ErrMalformedToken  = errors.New("malformed approval token")
	ErrWrongRequest    = errors.New("token is for another approval request")
	ErrWrongIntent     = errors.New("token is bound to other call content (governed_intent_hash)")
	ErrWrongSubject    = errors.New("token is for another agent (subject)")
	ErrUntrustedSigner = errors.New("approver is not trusted for this request")
	ErrNoApprovers     = errors.New("request has no trusted approvers")
	ErrSelfApproval    = errors.New("the requesting agent's key cannot approve its own call")
	ErrNotYetValid     = errors.New("token is not yet valid (issued_at in the future)")
	ErrTokenExpired    = errors.New("token has expired")
	ErrLifetimeTooLong = errors.New("token lifetime exceeds 3600 s")
	ErrBadSignature    = errors.New("token signature does not verify")
	ErrOutcomeMismatch = errors.New("outcome does not match the signed decision")
	ErrRequestExpired  = errors.New("approval request deadline has passed")
	ErrReplay          = errors.New("replay detected")
	ErrDuplicateVote   = errors.New("replay detected: this approver already decided this request")
	// ErrAmendmentRefused: the token's amended_arguments leave what the
	// approver was shown or what the policy allows (the kernel checks it).
	ErrAmendmentRefused = errors.New("amendment refused")
)

// Verify is the whole rule for accepting a human decision. It parses the
// RECEIVED bytes and checks, failing closed on the first problem:
//
//  1. size limit, strict JSON, schema, decision ∈ {approved, denied}, note size;
//  2. binding: request_id = req.ApprovalID, governed_intent_hash =
//     req.ParameterHash, subject = req.SubjectID (all attacker-controlled
//     fields, compared against the kernel's own record);
//  3. approver: a valid key;
//  4. time at ref: issued_at ≤ ref+60 s, ref < expires_at, lifetime in
//     (0, 3600] s, and ref before the request's own deadline;
//  5. the Ed25519 signature, by the approver key, over the received bytes;
//  6. the approver, now known to have signed: in req.TrustedApprovers
//     (empty set = deny), not the agent's key, not a listed requester, not
//     already voted (checked after the signature, so that a forged token
//     learns nothing of who may approve or who has voted);
//  7. the HTTP outcome, when given, equals the signed decision.
//
// Consumption (single use) is the caller's atomic store transition.
func Verify(raw []byte, req *Request, ref time.Time, outcome string) (*Token, error) {
	if len(raw) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrMalformedToken, MaxTokenBytes)
	}
	var t Token
	if err := canon.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedToken, err)
	}
	if t.Schema != TokenSchema || t.ID == "" || (t.Decision != DecisionApproved && t.Decision != DecisionDenied) || len(t.Note) > MaxNoteLen {
		return nil, fmt.Errorf("%w: schema, id, decision or note", ErrMalformedToken)
	}
	// The id keys the durable consumed set: only ids every store keys
	// alike (PostgreSQL text holds no NUL; bbolt keys end at 32 KiB) and
	// that print safely in receipts. chio's own are "at-" + UUIDv7.
	if !ValidID(t.ID) {
		return nil, fmt.Errorf("%w: id must be %s", ErrMalformedToken, IDRule)
	}
	switch {
	case t.RequestID != req.ApprovalID:
		return nil, ErrWrongRequest
	case t.GovernedIntentHash != req.ParameterHash:
		return nil, ErrWrongIntent
	case t.Subject != req.SubjectID:
		return nil, ErrWrongSubject
	}
	approver, err := keys.ParsePublicKey(t.Approver)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUntrustedSigner, err)
	}
	now := ref.Unix()
	switch {
	case t.IssuedAt > now+int64(MaxSkew/time.Second):
		return nil, ErrNotYetValid
	case now >= t.ExpiresAt:
		return nil, ErrTokenExpired
	case t.ExpiresAt <= t.IssuedAt || t.ExpiresAt-t.IssuedAt > int64(MaxApprovalTTL/time.Second):
		return nil, ErrLifetimeTooLong
	case now >= req.ExpiresAt:
		return nil, ErrRequestExpired
	}
	if err := signed.Verify(raw, TokenSchema, approver); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	// Judged only once the named approver is known to have signed: a
	// forged token must not learn who may approve the request or who has
	// voted on it from how it is refused.
	switch {
	case len(req.TrustedApprovers) == 0:
		return nil, ErrNoApprovers
	case t.Approver == req.SubjectID || t.Approver == req.SubjectPublicKey:
		return nil, ErrSelfApproval
	case contains(req.Requesters, t.Approver):
		return nil, fmt.Errorf("%w: approver is listed as a requester", ErrSelfApproval)
	case !req.Trusts(t.Approver):
		return nil, ErrUntrustedSigner
	case req.HasVoted(t.Approver):
		return nil, ErrDuplicateVote
	}
	if outcome != "" && outcome != t.Decision {
		return nil, fmt.Errorf("%w: outcome %q, token says %q", ErrOutcomeMismatch, outcome, t.Decision)
	}
	return &t, nil
}

// SignedByTrusted reports whether raw is a token signed by an approver
// req trusts, whatever else Verify would refuse in it (its times, its
// binding): the kernel tells only such a presenter how a request that is
// no longer pending ended.
func SignedByTrusted(raw []byte, req *Request) bool { return SignedBy(raw, req.Trusts) }

// SignedBy reports whether raw is a token whose signature verifies by the
// approver it names, a key trusts accepts. Only the signature and the
// signer are checked, not what the token binds.
func SignedBy(raw []byte, trusts func(approver string) bool) bool {
	var t Token
	if len(raw) > MaxTokenBytes || canon.Unmarshal(raw, &t) != nil || !trusts(t.Approver) {
		return false
	}
	approver, err := keys.ParsePublicKey(t.Approver)
	return err == nil && signed.Verify(raw, TokenSchema, approver) == nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Batch rejection reasons.
var (
	ErrMalformedBatch = errors.New("malformed batch approval token")
	ErrBatchWindow    = errors.New("batch approval window is invalid or over")
	// ErrWrongAudience: the token was signed for another kernel.
	ErrWrongAudience = errors.New("batch approval token is for another kernel (audience)")
)

// MaxBatchWindow bounds a standing approval's validity window.
const MaxBatchWindow = 30 * 24 * time.Hour

// VerifyBatch is the rule for accepting a standing approval: strict parse,
// an audience that is audience (the verifying kernel's own key, as
// keys.PublicKey.String writes it), valid patterns and limits, a window
// that is sane and not over at ref, an approver that trusted accepts and
// is not the subject, and the signature (which covers the audience).
func VerifyBatch(raw []byte, audience string, trusted func(approver string) bool, ref time.Time) (*BatchToken, error) {
	if len(raw) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrMalformedBatch, MaxTokenBytes)
	}
	var b BatchToken
	if err := canon.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedBatch, err)
	}
	if b.Schema != BatchSchema {
		return nil, fmt.Errorf("%w: schema must be %s", ErrMalformedBatch, BatchSchema)
	}
	// The id must be one DELETE /approvals/batch/{id} can name (else the
	// batch could not be revoked) and safe to print (ValidID).
	if !ValidID(b.ID) {
		return nil, fmt.Errorf("%w: id must be %s", ErrMalformedBatch, IDRule)
	}
	// A token names the one kernel it may create a standing approval at:
	// the approver's key is trusted by every deployment they approve for.
	switch {
	case b.Audience == "":
		return nil, fmt.Errorf("%w: audience is required: the public key of the kernel the standing approval is for "+
			"(this kernel's is %s, its kernel_key at GET /healthz); chio approval batch create fills it in", ErrMalformedBatch, audience)
	case b.Audience != audience:
		return nil, fmt.Errorf("%w: the token is for kernel %s, this kernel is %s", ErrWrongAudience, b.Audience, audience)
	}
	if err := CheckPattern(b.ServerPattern); err != nil {
		return nil, fmt.Errorf("%w: server_pattern %v", ErrMalformedBatch, err)
	}
	if err := CheckPattern(b.ToolPattern); err != nil {
		return nil, fmt.Errorf("%w: tool_pattern %v", ErrMalformedBatch, err)
	}
	if b.MaxCalls != nil && *b.MaxCalls < 1 ||
		b.MaxAmountPerCall != nil && (b.MaxAmountPerCall.Units < 0 || b.MaxAmountPerCall.Currency == "") ||
		b.MaxTotalAmount != nil && (b.MaxTotalAmount.Units < 0 || b.MaxTotalAmount.Currency == "") {
		return nil, fmt.Errorf("%w: limits", ErrMalformedBatch)
	}
	if b.NotAfter <= b.NotBefore || b.NotAfter-b.NotBefore > int64(MaxBatchWindow/time.Second) || ref.Unix() >= b.NotAfter {
		return nil, ErrBatchWindow
	}
	approver, err := keys.ParsePublicKey(b.Approver)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUntrustedSigner, err)
	}
	if b.Subject != "" {
		if _, err := keys.ParsePublicKey(b.Subject); err != nil {
			return nil, fmt.Errorf("%w: subject: %v", ErrMalformedBatch, err)
		}
		if b.Subject == b.Approver {
			return nil, ErrSelfApproval
		}
	}
	if trusted == nil || !trusted(b.Approver) {
		return nil, ErrUntrustedSigner
	}
	if err := signed.Verify(raw, BatchSchema, approver); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return &b, nil
}
