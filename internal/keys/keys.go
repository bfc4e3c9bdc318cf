package keys

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"filippo.io/edwards25519"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// Prefix is the text form's algorithm tag.
const Prefix = "ed25519:"

// Sentinel errors for callers that branch on why a key was refused.
var (
	ErrMalformedKey = errors.New("malformed public key")
	ErrWeakKey      = errors.New("weak public key (small order)")
	// ErrTorsionKey is a weak key too (errors.Is(err, ErrWeakKey) holds):
	// one with a torsion component (see PublicKeyFromBytes).
	ErrTorsionKey = fmt.Errorf("%w: it has a torsion component (A+T, not in the prime-order subgroup; "+
		"no Ed25519 key generator makes such a key, and the private key of A also signs for it)", ErrWeakKey)
	ErrNonCanonical  = errors.New("non-canonical public key encoding")
	ErrBadPrivateKey = errors.New("not an Ed25519 PKCS#8 private key")
)

// PublicKey is a validated Ed25519 public key. The zero value is invalid and
// is never produced by ParsePublicKey.
type PublicKey struct {
	b  [ed25519.PublicKeySize]byte
	ok bool
}

// ParsePublicKey parses `ed25519:<64 lowercase hex>` and rejects weak keys.
func ParsePublicKey(s string) (PublicKey, error) {
	rest, found := strings.CutPrefix(s, Prefix)
	if !found {
		return PublicKey{}, fmt.Errorf("%w: %q does not start with %q", ErrMalformedKey, abbreviate(s), Prefix)
	}
	if len(rest) != 2*ed25519.PublicKeySize || strings.ToLower(rest) != rest {
		return PublicKey{}, fmt.Errorf("%w: want 64 lowercase hex digits after %q", ErrMalformedKey, Prefix)
	}
	raw, err := hex.DecodeString(rest)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: %v", ErrMalformedKey, err)
	}
	return PublicKeyFromBytes(raw)
}

// PublicKeyFromBytes validates a raw 32-byte key: the encoding must be a
// canonical point that is not of small order. The identity point, for one,
// verifies every signature under crypto/ed25519's cofactorless check.
func PublicKeyFromBytes(raw []byte) (PublicKey, error) {
	if len(raw) != ed25519.PublicKeySize {
		return PublicKey{}, fmt.Errorf("%w: %d bytes, want %d", ErrMalformedKey, len(raw), ed25519.PublicKeySize)
	}
	p, err := new(edwards25519.Point).SetBytes(raw)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%w: not a curve point", ErrMalformedKey)
	}
	// SetBytes accepts non-canonical y ≥ p; re-encoding exposes them.
	if string(p.Bytes()) != string(raw) {
		return PublicKey{}, ErrNonCanonical
	}
	if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
		return PublicKey{}, ErrWeakKey
	}
	// A point with a torsion component, A' = A + T (T of small order), is
	// not small-order, yet whoever holds A's private scalar a also signs
	// for A': the cofactorless check [S]B = R + [k]A' accepts S = r + k·a
	// whenever [k]T is the identity (every other nonce for T of order 2).
	// Accepted, one private key would pass as two distinct keys: two
	// approvers of one quorum, or an agent beside its own approver. A real
	// key is aB, in the prime-order subgroup: [ℓ]A' must be the identity,
	// i.e. [ℓ−1]A' = −A'.
	if new(edwards25519.Point).VarTimeDoubleScalarBaseMult(orderMinusOne, p, edwards25519.NewScalar()).
		Equal(new(edwards25519.Point).Negate(p)) != 1 {
		return PublicKey{}, ErrTorsionKey
	}
	var k PublicKey
	copy(k.b[:], raw)
	k.ok = true
	return k, nil
}

// orderMinusOne is ℓ−1, ℓ = 2^252 + 27742317777372353535851937790883648493
// the order of the base point (little-endian).
var orderMinusOne = func() *edwards25519.Scalar {
	b := [32]byte{0xec, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 31: 0x10}
	s, err := new(edwards25519.Scalar).SetCanonicalBytes(b[:])
	if err != nil {
		panic("keys: ℓ−1: " + err.Error())
	}
	return s
}()

// String returns the `ed25519:<hex>` text form.
func (k PublicKey) String() string {
	if !k.ok {
		return ""
	}
	var b [len(Prefix) + 2*len(k.b)]byte
	copy(b[:], Prefix)
	hex.Encode(b[len(Prefix):], k.b[:])
	return string(b[:])
}

// IsZero reports whether k is the unset zero value.
func (k PublicKey) IsZero() bool { return !k.ok }

// Equal reports whether two keys are the same valid key.
func (k PublicKey) Equal(o PublicKey) bool { return k.ok && o.ok && k.b == o.b }

// Ed25519 returns the key for crypto/ed25519.
func (k PublicKey) Ed25519() ed25519.PublicKey { return ed25519.PublicKey(k.b[:]) }

// MarshalText implements encoding.TextMarshaler.
func (k PublicKey) MarshalText() ([]byte, error) {
	if !k.ok {
		return nil, fmt.Errorf("%w: zero key", ErrMalformedKey)
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with all weak-key checks.
func (k *PublicKey) UnmarshalText(b []byte) error {
	p, err := ParsePublicKey(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}

// PrivateKey holds an Ed25519 signing key. It is deliberately not printable.
type PrivateKey struct {
	k ed25519.PrivateKey
}

// Generate makes a new key from rand (crypto/rand.Reader in production).
func Generate(rand io.Reader) (PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	if err != nil {
		return PrivateKey{}, fmt.Errorf("keys: generate: %w", err)
	}
	return PrivateKey{k: priv}, nil
}

// FromSeed builds a key from a 32-byte seed (tests, custodial derivation).
func FromSeed(seed []byte) PrivateKey {
	return PrivateKey{k: ed25519.NewKeyFromSeed(seed)}
}

// Public returns the public half.
func (p PrivateKey) Public() PublicKey {
	var k PublicKey
	copy(k.b[:], p.k[32:])
	k.ok = true
	return k
}

// SignRaw signs msg. Callers sign domain-separated messages through package
// signed; SignRaw is the primitive underneath. It runs on curve25519-voi,
// whose base-point multiplication costs ~60% of crypto/ed25519's; Ed25519
// signing is deterministic, so the signature is crypto/ed25519's, byte for
// byte (sign_test.go).
func (p PrivateKey) SignRaw(msg []byte) []byte {
	if len(p.k) != ed25519.PrivateKeySize {
		panic("keys: SignRaw on zero PrivateKey") // programmer error
	}
	return voi.Sign(voi.PrivateKey(p.k), msg)
}

// String hides the key material.
func (p PrivateKey) String() string { return "PrivateKey(" + p.Public().String() + ")" }

// GoString hides the key material from %#v.
func (p PrivateKey) GoString() string { return p.String() }

// MarshalPKCS8PEM encodes the key as a PKCS#8 PEM block (`openssl pkey` reads it).
func (p PrivateKey) MarshalPKCS8PEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(p.k)
	if err != nil {
		return nil, fmt.Errorf("keys: pkcs8: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePKCS8PEM decodes a PKCS#8 PEM Ed25519 private key.
func ParsePKCS8PEM(data []byte) (PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return PrivateKey{}, fmt.Errorf("%w: no PRIVATE KEY PEM block", ErrBadPrivateKey)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return PrivateKey{}, fmt.Errorf("%w: %v", ErrBadPrivateKey, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return PrivateKey{}, fmt.Errorf("%w: key is %T", ErrBadPrivateKey, k)
	}
	return PrivateKey{k: ek}, nil
}

// LoadPrivateKey reads a PKCS#8 PEM key file.
func LoadPrivateKey(path string) (PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return PrivateKey{}, fmt.Errorf("keys: read %s: %w", path, err)
	}
	k, err := ParsePKCS8PEM(data)
	if err != nil {
		return PrivateKey{}, fmt.Errorf("keys: %s: %w", path, err)
	}
	return k, nil
}

// WritePrivateKey writes the key to path with mode 0600, refusing to
// overwrite an existing file (a lost key cannot be recovered).
func WritePrivateKey(path string, p PrivateKey) error {
	data, err := p.MarshalPKCS8PEM()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("keys: create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("keys: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("keys: sync %s: %w", path, err)
	}
	return f.Close()
}

func abbreviate(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}
