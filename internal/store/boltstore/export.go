package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/receipt"
)

var _ receipt.Exporter = (*Store)(nil)

// One read transaction of the export reads at most exportChunk entries
// and copies out at most about exportChunkBytes, then ends before any of
// it is written to the client. A read transaction holds bbolt's mmap lock,
// and a commit that grows the file past the mapping waits for every open
// one: a transaction kept open for as long as a slow client reads would
// stop every decision behind it (and healing, which needs dbMu alone).
var (
	exportChunk      = 4096
	exportChunkBytes = 4 << 20
)

// Export writes the audit export (receipt.ExportFormat) as of one snapshot
// point: the first read transaction fixes last, the receipt the export
// ends at, and the last checkpoint it includes; later, short transactions
// read the rest in chunks. That is as consistent as one transaction,
// because nothing the export reads at or below those bounds changes:
//   - receipts are append-only by seq, never rewritten or deleted;
//   - the metadata-key index is complete through last (last is at most
//     indexedThrough) and only ever gains entries above it;
//   - checkpoints are stored at their tree size and signed as the tree
//     grows, so one signed after the snapshot point lies above the bound
//     (a re-signed checkpoint of the same size, after a restart, commits
//     to the same tree);
//   - the approval and batch records the evidence comes from are not
//     rewritten in what the evidence carries once a receipt cites them:
//     votes are added only while a request is pending (kernel/votes.go),
//     and a batch's signed token never changes (PutBatch rewrites only its
//     use and retirement state).
//
// So no checkpoint covers a receipt the file lacks. The receipts that
// carry approval evidence are found through the metadata-key index, so only
// those few are decoded; the snapshot therefore ends where the index does,
// which is at or after every receipt committed before the call.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	if err := s.syncIndex(); err != nil {
		return err
	}
	var last, lastCheckpoint uint64
	if err := s.view(func(btx *bolt.Tx) error {
		if k, _ := btx.Bucket(bucketReceipts).Cursor().Last(); k != nil {
			last = min(binary.BigEndian.Uint64(k), indexedThrough(btx))
		}
		lastCheckpoint = lastKeyAtMost(btx.Bucket(bucketCheckpoints), last)
		return nil
	}); err != nil {
		return err
	}
	x := receipt.NewExportWriter(w, receipt.ExportHeader{KernelKey: s.key.Public().String(),
		ExportedAt: time.Now().UnixMilli(), Receipts: last})
	if err := s.exportSigned(ctx, bucketReceipts, last, x); err != nil {
		return err
	}
	if err := s.exportSigned(ctx, bucketCheckpoints, lastCheckpoint, x); err != nil {
		return err
	}
	if err := s.exportEvidence(ctx, last, "approval_token_id", "approval_request_id", func(t *tx, id string) (any, error) {
		req, err := t.Approval(id)
		if err != nil {
			return nil, fmt.Errorf("boltstore: export: approval %s: %w", id, err)
		}
		return req.Evidence(), nil
	}, x); err != nil {
		return err
	}
	if err := s.exportEvidence(ctx, last, "batch_approval_id", "batch_approval_id", func(t *tx, id string) (any, error) {
		b, err := t.Batch(id)
		if err != nil {
			return nil, fmt.Errorf("boltstore: export: batch %s: %w", id, err)
		}
		return receipt.BatchEvidence{Type: receipt.EvidenceBatch, BatchApprovalID: id, Token: b.Raw}, nil
	}, x); err != nil {
		return err
	}
	return x.Flush()
}

// lastKeyAtMost returns the largest seq key in b that is at most last, or 0.
func lastKeyAtMost(b *bolt.Bucket, last uint64) uint64 {
	if last == 0 {
		return 0
	}
	c := b.Cursor()
	k, _ := c.Seek(seqKey(last + 1))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k == nil {
		return 0
	}
	return binary.BigEndian.Uint64(k)
}

// exportSigned writes the stored values of bucket (keyed by seq) up to
// key last, verbatim, a chunk per read transaction.
func (s *Store) exportSigned(ctx context.Context, bucket []byte, last uint64, x *receipt.ExportWriter) error {
	from := uint64(0) // the next chunk starts at this key
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var chunk [][]byte
		if err := s.view(func(btx *bolt.Tx) error {
			c, size := btx.Bucket(bucket).Cursor(), 0
			for k, raw := c.Seek(seqKey(from)); k != nil && binary.BigEndian.Uint64(k) <= last; k, raw = c.Next() {
				if len(chunk) == exportChunk || size >= exportChunkBytes {
					break
				}
				chunk = append(chunk, bytes.Clone(raw)) // bbolt memory is valid only inside the tx
				size += len(raw)
				from = binary.BigEndian.Uint64(k) + 1
			}
			return nil
		}); err != nil {
			return err
		}
		if len(chunk) == 0 {
			return nil
		}
		for _, raw := range chunk {
			if err := x.Signed(raw); err != nil {
				return err
			}
		}
	}
}

// exportEvidence writes one evidence record per distinct metadata[idKey]
// among the receipts up to last that carry metadata key marker, a chunk of
// marked receipts per read transaction.
func (s *Store) exportEvidence(ctx context.Context, last uint64, marker, idKey string,
	build func(t *tx, id string) (any, error), x *receipt.ExportWriter) error {
	seen := map[string]bool{}
	from := uint64(0) // the next chunk starts at this seq
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var records []any
		more := false
		if err := s.view(func(btx *bolt.Tx) error {
			sub := btx.Bucket(dimMeta.bucket).Bucket([]byte(marker))
			if sub == nil {
				return nil
			}
			t := &tx{btx: btx, s: s, last: last}
			rb := btx.Bucket(bucketReceipts)
			c, n := sub.Cursor(), 0
			for k, _ := c.Seek(seqKey(from)); k != nil && binary.BigEndian.Uint64(k) <= last; k, _ = c.Next() {
				if n == exportChunk {
					more = true
					return nil
				}
				n++
				from = binary.BigEndian.Uint64(k) + 1
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
				rec, err := build(t, id)
				if err != nil {
					return err
				}
				records = append(records, rec)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, rec := range records {
			if err := x.Record(rec); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
	}
}
