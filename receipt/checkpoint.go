package receipt

import (
	"errors"
	"fmt"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// CheckpointSchema is the checkpoint's schema string and signature domain.
const CheckpointSchema = "chio.checkpoint.v1"

// ErrInvalidCheckpoint marks a checkpoint that is malformed (as opposed to
// mis-signed, which is signed.ErrBadSignature).
var ErrInvalidCheckpoint = errors.New("invalid checkpoint")

// maxTreeSize keeps tree_size an exactly representable JSON number (SPEC §2).
const maxTreeSize = 1 << 53

// Checkpoint is SPEC §3's signed tree head over the receipt log.
type Checkpoint struct {
	Schema    string `json:"schema"`
	TreeSize  uint64 `json:"tree_size"`
	RootHash  string `json:"root_hash"` // lowercase hex
	Timestamp int64  `json:"timestamp"` // unix ms
	KernelKey string `json:"kernel_key"`
	Signature string `json:"signature,omitempty"`
}

// Root decodes RootHash.
func (c *Checkpoint) Root() ([32]byte, error) {
	h, err := ParseHash(c.RootHash)
	if err != nil {
		return h, fmt.Errorf("%w: root_hash: %w", ErrInvalidCheckpoint, err)
	}
	return h, nil
}

// SignCheckpoint signs the tree head (size, root) at ts and returns the
// canonical signed bytes (what is stored and served) and the parsed form.
func SignCheckpoint(key keys.PrivateKey, size uint64, root [32]byte, ts time.Time) ([]byte, *Checkpoint, error) {
	if size > maxTreeSize {
		return nil, nil, fmt.Errorf("%w: tree_size %d exceeds 2^53", ErrInvalidCheckpoint, size)
	}
	c := &Checkpoint{
		Schema:    CheckpointSchema,
		TreeSize:  size,
		RootHash:  HashHex(root),
		Timestamp: ts.UnixMilli(),
		KernelKey: key.Public().String(),
	}
	raw, err := signed.Sign(key, CheckpointSchema, c)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: sign: %w", err)
	}
	// Report the signature from the bytes themselves, not a re-derivation.
	var out Checkpoint
	if err := canon.Unmarshal(raw, &out); err != nil {
		return nil, nil, fmt.Errorf("checkpoint: reparse: %w", err)
	}
	return raw, &out, nil
}

// VerifyCheckpoint strictly parses raw and checks its signature, over the
// received bytes, against the expected kernel key (never against the key the
// checkpoint names for itself, which must nonetheless be that same key).
func VerifyCheckpoint(raw []byte, kernelKey keys.PublicKey) (*Checkpoint, error) {
	var c Checkpoint
	if err := canon.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCheckpoint, err)
	}
	if c.Schema != CheckpointSchema {
		return nil, fmt.Errorf("%w: schema %q", ErrInvalidCheckpoint, c.Schema)
	}
	if _, err := c.Root(); err != nil {
		return nil, err
	}
	if c.KernelKey != kernelKey.String() {
		return nil, fmt.Errorf("%w: checkpoint names kernel key %s, expected %s", signed.ErrBadSignature, c.KernelKey, kernelKey)
	}
	if err := signed.Verify(raw, CheckpointSchema, kernelKey); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return &c, nil
}

// InclusionProof is the JSON form of an inclusion proof served over HTTP.
type InclusionProof struct {
	LeafIndex uint64   `json:"leaf_index"`
	TreeSize  uint64   `json:"tree_size"`
	LeafHash  string   `json:"leaf_hash"`
	Hashes    []string `json:"hashes"`
}

// Verify checks that receiptBytes (as stored) is the leaf the proof claims
// and that it is included under root, a root the caller trusts (typically
// from a verified Checkpoint of size TreeSize).
func (p InclusionProof) Verify(receiptBytes []byte, root [32]byte) error {
	claimed, err := ParseHash(p.LeafHash)
	if err != nil {
		return fmt.Errorf("leaf_hash: %w", err)
	}
	leaf := LeafHash(receiptBytes)
	if leaf != claimed {
		return fmt.Errorf("%w: leaf_hash is not the hash of the receipt", ErrProofMismatch)
	}
	proof, err := ProofFromHex(p.Hashes)
	if err != nil {
		return err
	}
	return VerifyInclusion(leaf, p.LeafIndex, p.TreeSize, proof, root)
}

// ConsistencyProof is the JSON form of a consistency proof between two tree
// sizes.
type ConsistencyProof struct {
	From   uint64   `json:"from"`
	To     uint64   `json:"to"`
	Hashes []string `json:"hashes"`
}

// Verify checks that the tree of size To with rootTo extends the tree of
// size From with rootFrom.
func (p ConsistencyProof) Verify(rootFrom, rootTo [32]byte) error {
	proof, err := ProofFromHex(p.Hashes)
	if err != nil {
		return err
	}
	return VerifyConsistency(p.From, p.To, rootFrom, rootTo, proof)
}
