package kernel

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofrs/uuid/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// CapabilitySchema is the capability's schema and signature domain.
const CapabilitySchema = "chio.capability.v1"

// Capability grants a subject (agent key) the named policy grants until
// ExpiresAt. It is signed by the kernel key or a configured authority key.
type Capability struct {
	Schema  string   `json:"schema"`
	ID      string   `json:"id"`
	Issuer  string   `json:"issuer"`
	Subject string   `json:"subject"`
	Grants  []string `json:"grants"`
	// Label names the agent for humans ("support-bot-eu"); signed with the
	// rest, so approvers can trust it as the issuer's word. Optional.
	Label     string `json:"label,omitempty"`
	IssuedAt  int64  `json:"issued_at"`
	ExpiresAt int64  `json:"expires_at"`
	Signature string `json:"signature,omitempty"`
}

// Capability errors.
var (
	ErrCapabilityInvalid = errors.New("invalid capability")
	ErrCapabilityExpired = errors.New("capability expired")
	ErrCapabilityRevoked = errors.New("capability revoked")
)

// IssueCapability signs a new capability for subject. now comes from the
// caller's clock.
func IssueCapability(issuer keys.PrivateKey, subject keys.PublicKey, grants []string, now time.Time, ttl time.Duration) ([]byte, *Capability, error) {
	return IssueLabeledCapability(issuer, subject, "", grants, now, ttl)
}

// IssueLabeledCapability is IssueCapability with a label naming the agent.
func IssueLabeledCapability(issuer keys.PrivateKey, subject keys.PublicKey, label string, grants []string, now time.Time, ttl time.Duration) ([]byte, *Capability, error) {
	if err := checkLabel(label); err != nil {
		return nil, nil, err
	}
	if subject.IsZero() {
		return nil, nil, fmt.Errorf("%w: no subject key", ErrCapabilityInvalid)
	}
	if len(grants) == 0 || len(grants) > MaxCapabilityGrants {
		return nil, nil, fmt.Errorf("%w: need 1..%d grants", ErrCapabilityInvalid, MaxCapabilityGrants)
	}
	// Times are whole seconds: a ttl under one would sign a capability
	// that expires as it is issued, which ParseCapability refuses.
	if ttl < time.Second || ttl > MaxCapabilityTTL {
		return nil, nil, fmt.Errorf("%w: ttl must be from 1s to %s", ErrCapabilityInvalid, MaxCapabilityTTL)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, nil, err
	}
	c := &Capability{
		Schema: CapabilitySchema, ID: "cap-" + id.String(), Issuer: issuer.Public().String(),
		Subject: subject.String(), Grants: grants, Label: label,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix(),
	}
	raw, err := signed.Sign(issuer, CapabilitySchema, c)
	if err != nil {
		return nil, nil, err
	}
	return raw, c, nil
}

// ParseCapability strictly decodes a capability and verifies its signature
// against its issuer, which must be one of trusted. It does not check time
// or revocation (those depend on the reference time and the store).
func ParseCapability(raw []byte, trusted ...keys.PublicKey) (*Capability, keys.PublicKey, error) {
	if len(raw) > MaxCapabilityBytes {
		return nil, keys.PublicKey{}, fmt.Errorf("%w: larger than %d bytes", ErrCapabilityInvalid, MaxCapabilityBytes)
	}
	var c Capability
	if err := canon.Unmarshal(raw, &c); err != nil {
		return nil, keys.PublicKey{}, fmt.Errorf("%w: %v", ErrCapabilityInvalid, err)
	}
	if c.Schema != CapabilitySchema || c.ID == "" || len(c.Grants) == 0 || len(c.Grants) > MaxCapabilityGrants {
		return nil, keys.PublicKey{}, fmt.Errorf("%w: missing schema, id or grants", ErrCapabilityInvalid)
	}
	// chio issues capabilities for at most MaxCapabilityTTL; one signed by
	// an authority key is held to the same lifetime (its issued_at to its
	// expires_at), so no issuer can mint a capability that never needs
	// renewing. One that expires before it is issued is malformed.
	if c.ExpiresAt <= c.IssuedAt || c.ExpiresAt-c.IssuedAt > int64(MaxCapabilityTTL/time.Second) {
		return nil, keys.PublicKey{}, fmt.Errorf("%w: lifetime (issued_at to expires_at) must be in (0, %s]", ErrCapabilityInvalid, MaxCapabilityTTL)
	}
	if !validCapabilityID(c.ID) {
		// An authority key may sign any id; one a store cannot key (longer
		// than Revoke takes, or a NUL or invalid UTF-8, which PostgreSQL
		// text cannot hold) could be used but never revoked.
		return nil, keys.PublicKey{}, fmt.Errorf("%w: id must be 1..%d of [A-Za-z0-9._:-]", ErrCapabilityInvalid, MaxRequestIDLen)
	}
	if err := checkLabel(c.Label); err != nil {
		return nil, keys.PublicKey{}, err
	}
	subject, err := keys.ParsePublicKey(c.Subject)
	if err != nil {
		return nil, keys.PublicKey{}, fmt.Errorf("%w: subject: %v", ErrCapabilityInvalid, err)
	}
	// Trust is decided by our configured keys; the issuer field only selects
	// among them and is never trusted on its own.
	for _, k := range trusted {
		if !k.IsZero() && k.String() == c.Issuer {
			if err := signed.Verify(raw, CapabilitySchema, k); err != nil {
				return nil, keys.PublicKey{}, fmt.Errorf("%w: %v", ErrCapabilityInvalid, err)
			}
			return &c, subject, nil
		}
	}
	return nil, keys.PublicKey{}, fmt.Errorf("%w: issuer %q is not a trusted authority", ErrCapabilityInvalid, c.Issuer)
}

// validCapabilityID reports whether id is an id every store keys and every
// revoke path can name (approval.ValidID: 1..128 characters of
// [A-Za-z0-9._:-], not "." or ".."), so every capability accepted can be
// revoked. The kernel mints "cap-<uuid>", well inside it.
func validCapabilityID(id string) bool { return approval.ValidID(id) }

// trustsIssuer reports whether issuer (a capability's issuer field, as
// kept on a call record) is still a key this kernel accepts capabilities
// from. The trusted set is fixed at start; a restart without an authority
// key ends the trust in every capability it signed, including those whose
// calls were parked before.
func (k *Kernel) trustsIssuer(issuer string) bool {
	for _, t := range k.trusted {
		if !t.IsZero() && t.String() == issuer {
			return true
		}
	}
	return false
}

// CheckTime reports whether c is valid at ref (seconds resolution).
func (c *Capability) CheckTime(ref time.Time) error {
	now := ref.Unix()
	if now >= c.ExpiresAt {
		return fmt.Errorf("%w at %d", ErrCapabilityExpired, c.ExpiresAt)
	}
	if c.IssuedAt > now+int64(MaxProofSkew/time.Second) {
		return fmt.Errorf("%w: issued in the future", ErrCapabilityInvalid)
	}
	return nil
}

// Has reports whether the capability names grant id.
func (c *Capability) Has(id string) bool {
	for _, g := range c.Grants {
		if g == id {
			return true
		}
	}
	return false
}

// checkLabel keeps a label short and printable: approvers read it.
func checkLabel(l string) error {
	if len(l) > MaxLabelLen || !utf8.ValidString(l) || strings.TrimSpace(l) != l ||
		strings.ContainsFunc(l, unicode.IsControl) {
		return fmt.Errorf("%w: label must be at most %d bytes of printable text without surrounding spaces", ErrCapabilityInvalid, MaxLabelLen)
	}
	return nil
}
