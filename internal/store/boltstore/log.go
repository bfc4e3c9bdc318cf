package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// bucketCheckpoints holds signed checkpoints: tree_size (8 bytes BE) → the
// signed bytes, exactly as served.
var bucketCheckpoints = []byte("checkpoints")

var _ receipt.CheckpointStore = (*Store)(nil)

// ReceiptLog returns the Merkle log the store feeds (Options.Log), or nil.
func (s *Store) ReceiptLog() *receipt.Log { return s.opts.Log }

// PutCheckpoint stores a signed checkpoint durably. It rides the group
// commit like any other write (no extra fsync of its own), and is called
// by the Log's signer, never from inside a commit.
func (s *Store) PutCheckpoint(ctx context.Context, size uint64, raw []byte) error {
	return s.Update(ctx, func(ktx kernel.Tx) error {
		t, ok := ktx.(*tx)
		if !ok {
			panic("boltstore: foreign transaction")
		}
		return t.btx.Bucket(bucketCheckpoints).Put(seqKey(size), raw)
	})
}

// LatestCheckpoint returns the stored checkpoint of the largest tree size.
func (s *Store) LatestCheckpoint() ([]byte, error) {
	var out []byte
	err := s.view(func(btx *bolt.Tx) error {
		if _, v := btx.Bucket(bucketCheckpoints).Cursor().Last(); v != nil {
			out = bytes.Clone(v)
		}
		return nil
	})
	return out, err
}

// Checkpoints visits stored checkpoints from tree size from, ascending.
func (s *Store) Checkpoints(from uint64, fn func(size uint64, raw []byte) bool) error {
	return s.view(func(btx *bolt.Tx) error {
		c := btx.Bucket(bucketCheckpoints).Cursor()
		for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
			if !fn(binary.BigEndian.Uint64(k), v) {
				break
			}
		}
		return nil
	})
}

// loadLeaves reads every leaf hash, in seq order, for the Merkle log. The
// leaves must be exactly seq 1..last: a hole means the store lost a receipt
// and nothing can be proven from it, so Open fails (closed).
func loadLeaves(db *bolt.DB, last uint64) ([][32]byte, error) {
	leaves := make([][32]byte, 0, last)
	err := db.View(func(btx *bolt.Tx) error {
		c := btx.Bucket(bucketLeaves).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			seq := binary.BigEndian.Uint64(k)
			if seq != uint64(len(leaves))+1 || len(v) != 32 {
				return fmt.Errorf("%w: leaf for seq %d found where seq %d was expected", receipt.ErrLogCorrupt, seq, len(leaves)+1)
			}
			leaves = append(leaves, [32]byte(v))
		}
		if uint64(len(leaves)) != last {
			return fmt.Errorf("%w: %d leaves for %d receipts", receipt.ErrLogCorrupt, len(leaves), last)
		}
		return nil
	})
	return leaves, err
}
