package boltstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/jsonexact"
	"github.com/chiokernel/chio/kernel"
)

// Standing approvals are kept forever (receipts name them and exports
// carry their tokens), so the allow path must not read them all. Beside
// bucketBatches, bucketLiveBatches holds one key per batch that is not
// retired (revoked or every call used): not_after (8 bytes BE) then the
// id. LiveBatches seeks past the keys whose window is over and reads only
// the rest: its cost is the batches that can still cover a call, which
// the kernel caps per approver, however many ever existed.

// liveKey is b's key in bucketLiveBatches. A not_after before 1970 is
// stored as 0: such a batch is expired for every clock the kernel reads.
func liveKey(b *approval.Batch) []byte {
	k := make([]byte, 8, 8+len(b.Token.ID))
	binary.BigEndian.PutUint64(k, uint64(max(b.Token.NotAfter, 0)))
	return append(k, b.Token.ID...)
}

func (t *tx) Batch(id string) (*approval.Batch, error) {
	v := t.btx.Bucket(bucketBatches).Get([]byte(id))
	if v == nil {
		return nil, kernel.ErrNotFound
	}
	var b approval.Batch
	if err := json.Unmarshal(v, &b); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt batch %q: %w", id, err)
	}
	return &b, nil
}

func (t *tx) Batches(after string, fn func(*approval.Batch) bool) error {
	c := t.btx.Bucket(bucketBatches).Cursor()
	k, _ := c.Seek([]byte(after))
	if k != nil && string(k) == after {
		k, _ = c.Next()
	}
	for ; k != nil; k, _ = c.Next() {
		b, err := t.Batch(string(k))
		if err != nil {
			return err
		}
		if !fn(b) {
			return nil
		}
	}
	return nil
}

// LiveBatches visits the batches live at now in id order (the order
// Batches visits them, so the same batch covers the same call).
func (t *tx) LiveBatches(now int64, fn func(*approval.Batch) bool) error {
	var ids []string
	from := make([]byte, 8)
	binary.BigEndian.PutUint64(from, uint64(max(now+1, 0))) // not_after > now
	c := t.btx.Bucket(bucketLiveBatches).Cursor()
	for k, _ := c.Seek(from); k != nil; k, _ = c.Next() {
		if len(k) < 8 {
			return fmt.Errorf("boltstore: corrupt live batch key %x", k)
		}
		ids = append(ids, string(k[8:]))
	}
	slices.Sort(ids)
	for _, id := range ids {
		b, err := t.Batch(id)
		if err != nil {
			return fmt.Errorf("boltstore: live batch %q: %w", id, err)
		}
		if !b.Live(now) {
			continue // never indexed so; the filter keeps the contract
		}
		if !fn(b) {
			return nil
		}
	}
	return nil
}

// PutBatch stores b and keeps its key in bucketLiveBatches exactly while
// it is not retired.
func (t *tx) PutBatch(b *approval.Batch) error {
	v, err := jsonexact.Marshal(b)
	if err != nil {
		return err
	}
	if old, err := t.Batch(b.Token.ID); err == nil {
		if err := t.btx.Bucket(bucketLiveBatches).Delete(liveKey(old)); err != nil {
			return err
		}
	}
	if !b.Retired() {
		if err := t.btx.Bucket(bucketLiveBatches).Put(liveKey(b), []byte{}); err != nil {
			return err
		}
	}
	return t.btx.Bucket(bucketBatches).Put([]byte(b.Token.ID), v)
}

// indexLiveBatches fills bucketLiveBatches from every stored batch: a
// store written before the index existed gets it at its first open.
func indexLiveBatches(btx *bolt.Tx) error {
	live := btx.Bucket(bucketLiveBatches)
	return btx.Bucket(bucketBatches).ForEach(func(k, v []byte) error {
		var b approval.Batch
		if err := json.Unmarshal(v, &b); err != nil || b.Token == nil {
			return fmt.Errorf("boltstore: corrupt batch %q: %v", k, err)
		}
		if b.Retired() {
			return nil
		}
		return live.Put(liveKey(&b), []byte{})
	})
}
