package receipt

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// Schema is the receipt's schema string and signature domain.
const Schema = "chio.receipt.v1"

// Verdicts of a receipt decision. PendingApproval never appears on a receipt:
// a suspended call is signed as Incomplete (seed: "Receipt Decisions").
const (
	Allow      = "allow"
	Deny       = "deny"
	Cancelled  = "cancelled"
	Incomplete = "incomplete"
)

// Decision is the signed outcome.
type Decision struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Guard   string `json:"guard,omitempty"`
}

// Receipt is SPEC §3's receipt. Field names are the wire contract.
type Receipt struct {
	Schema        string         `json:"schema"`
	ID            string         `json:"id"`
	Seq           uint64         `json:"seq"`
	Timestamp     int64          `json:"timestamp"` // unix ms
	RequestID     string         `json:"request_id"`
	CapabilityID  string         `json:"capability_id"`
	Subject       string         `json:"subject"`
	ToolServer    string         `json:"tool_server"`
	ToolName      string         `json:"tool_name"`
	Action        string         `json:"action"`
	ParameterHash string         `json:"parameter_hash"`
	Decision      Decision       `json:"decision"`
	Metadata      map[string]any `json:"metadata"`
	PolicyHash    string         `json:"policy_hash"`
	KernelKey     string         `json:"kernel_key"`
	Signature     string         `json:"signature,omitempty"`
}

// ErrInvalid marks a receipt that is malformed (as opposed to mis-signed).
var ErrInvalid = errors.New("invalid receipt")

// Sign fills Schema and KernelKey, signs r, and returns the canonical signed
// bytes: the exact bytes that are stored, hashed into the Merkle log and sent.
func Sign(key keys.PrivateKey, r *Receipt) ([]byte, error) {
	r.Schema = Schema
	r.KernelKey = key.Public().String()
	r.Signature = ""
	if r.Metadata == nil {
		r.Metadata = map[string]any{}
	}
	if err := r.validateShape(); err != nil {
		return nil, err
	}
	raw, err := signFast(key, r)
	if err != nil {
		return nil, fmt.Errorf("receipt: sign %s: %w", r.ID, err)
	}
	return raw, nil
}

// Parse strictly decodes stored or received receipt bytes. It does not
// verify the signature; use Verify for that.
func Parse(raw []byte) (*Receipt, error) {
	var r Receipt
	if err := canon.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%w: schema %q", ErrInvalid, r.Schema)
	}
	if err := r.validateShape(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Verify checks raw's signature against the kernel key it must have been
// signed by (never against the key the receipt names for itself), and that
// the receipt names that same key.
func Verify(raw []byte, kernelKey keys.PublicKey) (*Receipt, error) {
	r, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	if r.KernelKey != kernelKey.String() {
		return nil, fmt.Errorf("%w: receipt %s names kernel key %s, expected %s", signed.ErrBadSignature, r.ID, r.KernelKey, kernelKey)
	}
	if err := signed.Verify(raw, Schema, kernelKey); err != nil {
		return nil, fmt.Errorf("receipt %s: %w", r.ID, err)
	}
	return r, nil
}

func (r *Receipt) validateShape() error {
	for _, s := range []string{r.ID, r.RequestID, r.CapabilityID, r.Subject, r.ToolServer, r.ToolName, r.Action,
		r.ParameterHash, r.PolicyHash, r.KernelKey, r.Decision.Reason, r.Decision.Guard} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: invalid UTF-8", ErrInvalid)
		}
	}
	switch r.Decision.Verdict {
	case Allow:
	case Deny:
		if r.Decision.Guard == "" {
			return fmt.Errorf("%w: deny without guard", ErrInvalid)
		}
	case Cancelled, Incomplete:
		if r.Decision.Reason == "" {
			return fmt.Errorf("%w: %s without reason", ErrInvalid, r.Decision.Verdict)
		}
	default:
		return fmt.Errorf("%w: verdict %q", ErrInvalid, r.Decision.Verdict)
	}
	if r.ID == "" {
		return fmt.Errorf("%w: empty id", ErrInvalid)
	}
	return nil
}
