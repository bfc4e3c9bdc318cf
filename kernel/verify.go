package kernel

import (
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/chiokernel/chio/internal/keys"
)

// This file is the one place the kernel checks a raw Ed25519 signature
// (the agent's call proof). The acceptance rule is crypto/ed25519.Verify's,
// exactly:
//
//   - the key is a keys.PublicKey, which has already refused wrong lengths,
//     non-canonical encodings, small-order points and points with a
//     torsion component;
//   - the signature is 64 bytes and its S is below the group order ℓ;
//   - cofactorless: [S]B − [k]A, k = SHA-512(R ‖ A ‖ msg), re-encoded, must
//     equal the signature's first 32 bytes (so R must be canonical).
//
// The check runs on curve25519-voi with the VerifyOptionsStdLib preset,
// which is that rule (ref10's), over a precomputed table for A: agent keys
// repeat across calls, and the table is ~1.7× cheaper per verification
// than crypto/ed25519. verify_test.go holds the two to the same verdict on
// every Wycheproof and C2SP CCTV vector (testdata/ed25519) and under a
// differential fuzz target.
//
// Batch verification is deliberately absent: it is inherently cofactored,
// and with a mixed-order A or a torsioned R a batch can accept what the
// cofactorless rule refuses. Proving each R torsion-free costs a scalar
// multiplication, more than batching saves (verify_bench_test.go).

// stdlibRule is curve25519-voi's preset for crypto/ed25519's semantics.
var stdlibRule = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// verifyKey is an agent's public key with its precomputed verification
// table. The zero value verifies nothing. It is read-only once built, so
// concurrent verifications may share one.
type verifyKey struct {
	x *voi.ExpandedPublicKey
}

// newVerifyKey precomputes k's table (~5 µs, ~10 KiB).
func newVerifyKey(k keys.PublicKey) verifyKey {
	if k.IsZero() {
		return verifyKey{}
	}
	x, err := voi.NewExpandedPublicKey(voi.PublicKey(k.Ed25519()))
	if err != nil {
		// Unreachable for a keys.PublicKey (always a curve point); fail closed.
		return verifyKey{}
	}
	return verifyKey{x: x}
}

// verify reports whether sig is k's signature over msg.
func (vk verifyKey) verify(msg, sig []byte) bool {
	return vk.x != nil && len(sig) == voi.SignatureSize && voi.VerifyExpandedWithOptions(vk.x, msg, sig, stdlibRule)
}

// verifyKeyFor returns k's precomputed key from the kernel's bounded LRU,
// building it on a miss. The cache only saves work: an evicted key is
// simply rebuilt, and the verdict never depends on it.
func (k *Kernel) verifyKeyFor(pub keys.PublicKey) verifyKey {
	var id [32]byte
	copy(id[:], pub.Ed25519())
	if vk, ok := k.verifyKeys.Get(id); ok {
		return vk
	}
	vk := newVerifyKey(pub)
	if vk.x != nil {
		k.verifyKeys.Add(id, vk)
	}
	return vk
}
