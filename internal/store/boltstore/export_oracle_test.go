package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/receipt"
)

// ExportOneTxForTest is the export as it was before it read in chunks: the
// whole file from one read transaction. It is the oracle the chunked
// export must match byte for byte.
func ExportOneTxForTest(s *Store, ctx context.Context, w io.Writer) error {
	return exportOneTx(s, ctx, w)
}

// SetExportChunkForTest makes the export's read transactions this small
// until the returned function restores them.
func SetExportChunkForTest(entries, bytes int) (restore func()) {
	e, b := exportChunk, exportChunkBytes
	exportChunk, exportChunkBytes = entries, bytes
	return func() { exportChunk, exportChunkBytes = e, b }
}

func exportOneTx(s *Store, ctx context.Context, w io.Writer) error {
	if err := s.syncIndex(); err != nil {
		return err
	}
	return s.view(func(btx *bolt.Tx) error {
		var last uint64
		if k, _ := btx.Bucket(bucketReceipts).Cursor().Last(); k != nil {
			last = min(binary.BigEndian.Uint64(k), indexedThrough(btx))
		}
		x := receipt.NewExportWriter(w, receipt.ExportHeader{KernelKey: s.key.Public().String(),
			ExportedAt: time.Now().UnixMilli(), Receipts: last})
		c := btx.Bucket(bucketReceipts).Cursor()
		n := 0
		for k, raw := c.First(); k != nil && binary.BigEndian.Uint64(k) <= last; k, raw = c.Next() {
			if n++; n%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if err := x.Signed(raw); err != nil {
				return err
			}
		}
		cc := btx.Bucket(bucketCheckpoints).Cursor()
		for k, raw := cc.First(); k != nil && binary.BigEndian.Uint64(k) <= last; k, raw = cc.Next() {
			if err := x.Signed(raw); err != nil {
				return err
			}
		}
		t := &tx{btx: btx, s: s, last: last}
		if err := oneTxEvidence(t, "approval_token_id", "approval_request_id", func(id string) (any, error) {
			req, err := t.Approval(id)
			if err != nil {
				return nil, fmt.Errorf("boltstore: export: approval %s: %w", id, err)
			}
			return req.Evidence(), nil
		}, x); err != nil {
			return err
		}
		if err := oneTxEvidence(t, "batch_approval_id", "batch_approval_id", func(id string) (any, error) {
			b, err := t.Batch(id)
			if err != nil {
				return nil, fmt.Errorf("boltstore: export: batch %s: %w", id, err)
			}
			return receipt.BatchEvidence{Type: receipt.EvidenceBatch, BatchApprovalID: id, Token: b.Raw}, nil
		}, x); err != nil {
			return err
		}
		return x.Flush()
	})
}

// exportEvidence writes one evidence record per distinct metadata[idKey]
// among the receipts that carry metadata key marker.
func oneTxEvidence(t *tx, marker, idKey string, build func(id string) (any, error), x *receipt.ExportWriter) error {
	sub := t.btx.Bucket(dimMeta.bucket).Bucket([]byte(marker))
	if sub == nil {
		return nil
	}
	rb := t.btx.Bucket(bucketReceipts)
	seen := map[string]bool{}
	c := sub.Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= t.last; k, _ = c.Next() {
		r, err := receipt.Decode(rb.Get(k))
		if err != nil {
			continue // exported as stored; verification reports it
		}
		v, ok := r.Metadata[idKey]
		id := receipt.MetaString(v)
		if !ok || id == "" || seen[id] {
			continue
		}
		seen[id] = true
		rec, err := build(id)
		if err != nil {
			return err
		}
		if err := x.Record(rec); err != nil {
			return err
		}
	}
	return nil
}
