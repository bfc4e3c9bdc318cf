package receipt

// RFC 6962 §2.1 Merkle tree over receipts in seq order, with SHA-256.
//
// The log is append-only, so every complete, aligned power-of-two subtree,
// once full, never changes. Tree keeps all of them (levels[k][i] is the hash
// of leaves [i·2^k, (i+1)·2^k)), which makes any historical root or proof a
// walk of O(log n) lookups plus at most O(log n) fresh node hashes, and an
// append at most O(log n) (amortized O(1)) hashes. Memory is about 2×32 bytes
// per leaf.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"sync"
)

// Sentinel errors of proof generation and verification.
var (
	// ErrProofMismatch: the proof is well-formed but does not lead to the
	// expected root(s), or a leaf hash does not match its data.
	ErrProofMismatch = errors.New("merkle: proof does not match root")
	// ErrProofLength: the proof has the wrong number of hashes for the
	// claimed index and tree size(s).
	ErrProofLength = errors.New("merkle: wrong proof length")
	// ErrIndexOutOfRange: an index or size is outside the tree (index ≥
	// size, size > tree size, or m > n for consistency).
	ErrIndexOutOfRange = errors.New("merkle: index or size out of range")
	// ErrMalformedProof: a hash in a JSON proof is not 64 lowercase hex.
	ErrMalformedProof = errors.New("merkle: malformed hash")
)

// Domain-separation prefixes of RFC 6962 §2.1: a leaf can never be confused
// with an interior node (second-preimage resistance).
const (
	leafPrefix = 0x00
	nodePrefix = 0x01
)

var emptyRoot = sha256.Sum256(nil)

// EmptyRoot is the root of the empty tree: SHA-256 of the empty string.
func EmptyRoot() [32]byte { return emptyRoot }

// LeafHash is SHA-256(0x00 || data); data is the receipt bytes as stored.
func LeafHash(data []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{leafPrefix})
	h.Write(data)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// NodeHash is SHA-256(0x01 || l || r).
func NodeHash(l, r [32]byte) [32]byte {
	// A stack buffer and Sum256 avoid allocating a hash.Hash per node; this
	// is the hot loop of tree building.
	var buf [1 + 32 + 32]byte
	buf[0] = nodePrefix
	copy(buf[1:33], l[:])
	copy(buf[33:], r[:])
	return sha256.Sum256(buf[:])
}

// Tree is an append-only, in-memory RFC 6962 Merkle tree of leaf hashes.
//
// It is safe for concurrent use: Append takes a write lock and every reader
// (Size, Root, proofs) a read lock, so one writer and any number of readers
// may run at once (several writers are also safe, but serialize). Readers see
// a consistent prefix of the log and may ask for any historical size ≤ Size().
// The zero Tree is an empty tree ready for use.
type Tree struct {
	mu sync.RWMutex
	// levels[0] holds the leaf hashes; levels[k][i] is the hash of the
	// complete subtree over leaves [i<<k, (i+1)<<k).
	levels [][][32]byte
}

// NewTreeFromLeaves builds a tree from leaf hashes (copied) in one pass per
// level, which is much cheaper than n Appends.
func NewTreeFromLeaves(leaves [][32]byte) *Tree {
	t := &Tree{levels: [][][32]byte{append([][32]byte(nil), leaves...)}}
	for cur := t.levels[0]; len(cur) >= 2; cur = t.levels[len(t.levels)-1] {
		next := make([][32]byte, len(cur)/2)
		for i := range next {
			next[i] = NodeHash(cur[2*i], cur[2*i+1])
		}
		t.levels = append(t.levels, next)
	}
	return t
}

// Append adds a leaf hash and returns its index.
func (t *Tree) Append(leaf [32]byte) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.levels) == 0 {
		t.levels = [][][32]byte{nil}
	}
	t.levels[0] = append(t.levels[0], leaf)
	// Each time a level gets an even count, its last two nodes complete a
	// subtree one level up: a binary counter carry.
	for k := 0; len(t.levels[k])%2 == 0; k++ {
		n := len(t.levels[k])
		parent := NodeHash(t.levels[k][n-2], t.levels[k][n-1])
		if k+1 == len(t.levels) {
			t.levels = append(t.levels, nil)
		}
		t.levels[k+1] = append(t.levels[k+1], parent)
	}
	return uint64(len(t.levels[0]) - 1)
}

// Size is the number of leaves.
func (t *Tree) Size() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.size()
}

func (t *Tree) size() uint64 {
	if len(t.levels) == 0 {
		return 0
	}
	return uint64(len(t.levels[0]))
}

// Root is MTH(D[0:size]), the root the tree had when it held size leaves.
func (t *Tree) Root(size uint64) ([32]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if size > t.size() {
		return [32]byte{}, fmt.Errorf("%w: size %d > tree size %d", ErrIndexOutOfRange, size, t.size())
	}
	if size == 0 {
		return emptyRoot, nil
	}
	return t.hash(0, size), nil
}

// InclusionProof is PATH(index, D[0:size]) of RFC 6962 §2.1.1: sibling
// hashes from the leaf up to the root.
func (t *Tree) InclusionProof(index, size uint64) ([][32]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if size > t.size() || index >= size {
		return nil, fmt.Errorf("%w: index %d, size %d, tree size %d", ErrIndexOutOfRange, index, size, t.size())
	}
	return t.path(index, 0, size, make([][32]byte, 0, 64)), nil
}

// ConsistencyProof is PROOF(m, D[0:n]) of RFC 6962 §2.1.2. It is empty when
// m == 0 or m == n (nothing to prove).
func (t *Tree) ConsistencyProof(m, n uint64) ([][32]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if n > t.size() || m > n {
		return nil, fmt.Errorf("%w: m %d, n %d, tree size %d", ErrIndexOutOfRange, m, n, t.size())
	}
	out := make([][32]byte, 0, 64)
	if m == 0 || m == n {
		return out, nil
	}
	return t.subproof(m, 0, n, true, out), nil
}

// split is k of RFC 6962: the largest power of two smaller than n (n ≥ 2).
func split(n uint64) uint64 { return 1 << (bits.Len64(n-1) - 1) }

// hash is MTH(D[lo:hi]) for hi > lo. Ranges produced by the RFC recursion
// from 0 have a complete, aligned left part, so this is a lookup there and
// recursion only down the ragged right edge.
func (t *Tree) hash(lo, hi uint64) [32]byte {
	n := hi - lo
	if n&(n-1) == 0 && lo&(n-1) == 0 { // complete aligned subtree
		k := bits.TrailingZeros64(n)
		return t.levels[k][lo>>k]
	}
	k := split(n)
	return NodeHash(t.hash(lo, lo+k), t.hash(lo+k, hi))
}

// path appends PATH(m, D[lo:hi]) to out, deepest sibling first.
func (t *Tree) path(m, lo, hi uint64, out [][32]byte) [][32]byte {
	if hi-lo == 1 {
		return out
	}
	k := split(hi - lo)
	if m < lo+k {
		return append(t.path(m, lo, lo+k, out), t.hash(lo+k, hi))
	}
	return append(t.path(m, lo+k, hi, out), t.hash(lo, lo+k))
}

// subproof appends SUBPROOF(m, D[lo:hi], b) to out; m counts from lo.
func (t *Tree) subproof(m, lo, hi uint64, b bool, out [][32]byte) [][32]byte {
	if m == hi-lo {
		if b { // the verifier already knows this root
			return out
		}
		return append(out, t.hash(lo, hi))
	}
	k := split(hi - lo)
	if m <= k {
		return append(t.subproof(m, lo, lo+k, b, out), t.hash(lo+k, hi))
	}
	return append(t.subproof(m-k, lo+k, hi, false, out), t.hash(lo, lo+k))
}

// inclusionLen is the exact length of PATH(index, D[size]): one hash per
// level below the point where index and the last leaf diverge, plus one per
// left sibling above it (RFC 9162 §2.1.3 structure).
func inclusionLen(index, size uint64) int {
	inner := bits.Len64(index ^ (size - 1))
	return inner + bits.OnesCount64(index>>inner)
}

// VerifyInclusion checks that leaf is at index in the tree of size with the
// given root, using RFC 9162 §2.1.3.2. It needs nothing but its arguments.
// The proof authenticates the leaf against root only: size and root must come
// from the same verified Checkpoint (trees of sizes whose proofs have the same
// shape accept the same proof for the same root).
func VerifyInclusion(leaf [32]byte, index, size uint64, proof [][32]byte, root [32]byte) error {
	if index >= size {
		return fmt.Errorf("%w: index %d, size %d", ErrIndexOutOfRange, index, size)
	}
	if want := inclusionLen(index, size); len(proof) != want {
		return fmt.Errorf("%w: %d hashes, want %d", ErrProofLength, len(proof), want)
	}
	fn, sn := index, size-1
	r := leaf
	for _, p := range proof {
		if sn == 0 { // unreachable after the length check; kept from the RFC
			return ErrProofLength
		}
		if fn&1 == 1 || fn == sn {
			r = NodeHash(p, r)
			// Skip the levels where our node is the lone right-edge child.
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = NodeHash(r, p)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return ErrProofLength
	}
	if r != root {
		return ErrProofMismatch
	}
	return nil
}

// VerifyConsistency checks that the tree of size n with rootN extends the
// tree of size m with rootM, using RFC 9162 §2.1.4.2. m == n needs an empty
// proof and equal roots; m == 0 needs an empty proof and the empty root.
// As with VerifyInclusion, each size must come with its own verified root.
func VerifyConsistency(m, n uint64, rootM, rootN [32]byte, proof [][32]byte) error {
	switch {
	case m > n:
		return fmt.Errorf("%w: m %d > n %d", ErrIndexOutOfRange, m, n)
	case m == n || m == 0:
		if len(proof) != 0 {
			return fmt.Errorf("%w: %d hashes, want 0", ErrProofLength, len(proof))
		}
		if m == 0 && rootM != emptyRoot || m == n && rootM != rootN {
			return ErrProofMismatch
		}
		return nil
	}
	// Expected length: the path of leaf m-1 in tree n, minus the levels
	// below the largest complete subtree ending at m (its root is the seed),
	// plus that seed unless m is itself a power of two (then it is rootM).
	shift := bits.TrailingZeros64(m)
	inner := bits.Len64((m - 1) ^ (n - 1))
	want := inner - shift + bits.OnesCount64((m-1)>>inner)
	if m != 1<<shift {
		want++
	}
	if len(proof) != want {
		return fmt.Errorf("%w: %d hashes, want %d", ErrProofLength, len(proof), want)
	}
	if m == 1<<shift {
		proof = append([][32]byte{rootM}, proof...)
	}
	fn, sn := m-1, n-1
	for fn&1 == 1 {
		fn >>= 1
		sn >>= 1
	}
	fr, sr := proof[0], proof[0]
	for _, c := range proof[1:] {
		if sn == 0 {
			return ErrProofLength
		}
		if fn&1 == 1 || fn == sn {
			fr = NodeHash(c, fr)
			sr = NodeHash(c, sr)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			sr = NodeHash(sr, c)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return ErrProofLength
	}
	if fr != rootM || sr != rootN {
		return ErrProofMismatch
	}
	return nil
}

// HashHex is the lowercase hex form of a hash, as used in JSON.
func HashHex(h [32]byte) string { return hex.EncodeToString(h[:]) }

// ParseHash parses exactly 64 lowercase hex digits. Upper case is refused so
// that every hash has one text form.
func ParseHash(s string) ([32]byte, error) {
	var h [32]byte
	if len(s) != 64 {
		return h, fmt.Errorf("%w: %d characters, want 64", ErrMalformedProof, len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return h, fmt.Errorf("%w: not lowercase hex", ErrMalformedProof)
		}
	}
	hex.Decode(h[:], []byte(s)) // cannot fail after the check above
	return h, nil
}

// ProofToHex encodes a proof for JSON; never nil, so it marshals as [].
func ProofToHex(proof [][32]byte) []string {
	out := make([]string, len(proof))
	for i, h := range proof {
		out[i] = HashHex(h)
	}
	return out
}

// ProofFromHex decodes a JSON proof.
func ProofFromHex(hs []string) ([][32]byte, error) {
	out := make([][32]byte, len(hs))
	for i, s := range hs {
		h, err := ParseHash(s)
		if err != nil {
			return nil, fmt.Errorf("proof hash %d: %w", i, err)
		}
		out[i] = h
	}
	return out, nil
}
