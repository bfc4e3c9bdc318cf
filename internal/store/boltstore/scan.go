package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/receipt"
)

// Queries and stats read the log in chunks, a short read transaction per
// chunk, resuming by seq: never one transaction for a whole scan.
//
// A read transaction holds bbolt's mmap lock, and a commit that grows the
// file past the mapping waits for every open one; while one is open, the
// pages freed since it began cannot be reused either, so the file grows.
// A filter the indexes cannot answer (a request id, a metadata value)
// decodes every receipt the walk meets: in one transaction, a query over
// a 1M-receipt log would hold up for seconds the commit that must remap,
// and every decision queued behind it (a query whose caller is slow, for
// as long as the caller takes; a heal's reopen too). So a read transaction
// visits at most queryChunk index entries and copies out at most
// queryFirstChunk candidates (growing ×4 per chunk up to queryChunk, so a
// short page reads little) or about queryChunkBytes; the caller's callback
// and the decoding run after it has ended.
//
// A scan answers as of its start (queryEnd): the receipts up to the index's
// end then, which covers every receipt committed before the call. Later
// chunks read exactly what one transaction would have read then, because
// nothing at or below that end changes:
//   - receipts are append-only by seq, never rewritten or deleted;
//   - the index is complete through its end and only ever gains entries
//     above it (a block's time span may widen, with seqs above the end; a
//     value's count may grow, which only changes which index a chunk walks,
//     not what matches);
//   - the ranges (cursor bounds, end, time blocks) are fixed in the first
//     chunk and cut at the end, so a receipt committed while the scan runs
//     is never visited: a listing's next page (cursor) has it.
var (
	queryChunk      = 4096
	queryFirstChunk = 101 // a default page: 100 receipts, and one to learn there are more
	queryChunkBytes = 4 << 20
)

// queryEnd is the last seq a scan started now answers for: where the index
// ends (at least every receipt committed before a syncIndex that preceded).
func (s *Store) queryEnd() (end uint64, err error) {
	err = s.view(func(btx *bolt.Tx) error {
		if k, _ := btx.Bucket(bucketReceipts).Cursor().Last(); k != nil {
			end = min(binary.BigEndian.Uint64(k), indexedThrough(btx))
		}
		return nil
	})
	return end, err
}

// scan runs q over the receipts up to end, calling fn for every match in
// seq order (reversed with Desc) until it returns false.
func (s *Store) scan(end uint64, q receipt.Query, opt *scanOpts, fn func(uint64, []byte, *receipt.Receipt) bool) error {
	if opt == nil {
		opt = &scanOpts{}
	}
	decode := queryDecodes(&q)
	if decode && opt.keysOnly {
		return fmt.Errorf("boltstore: a count needs a filter the indexes answer")
	}
	out := &emitter{filter: &q.Filter, fn: fn, decode: decode, batch: 16}
	lim := chunkLimit{entries: queryChunk, candidates: queryFirstChunk, bytes: queryChunkBytes}
	if opt.keysOnly {
		lim.candidates = queryChunk // a count collects seqs only
	}
	var ranges []seqRange
	for first := true; first || len(ranges) > 0; first = false {
		var c chunk
		if err := s.view(func(btx *bolt.Tx) error {
			if first {
				ranges = queryRanges(btx, &q, end)
			}
			var err error
			c, ranges, err = readChunk(btx, &q, opt, ranges, lim)
			return err
		}); err != nil {
			return err
		}
		for i, seq := range c.seqs {
			if opt.keysOnly {
				if !fn(seq, nil, nil) {
					return nil
				}
			} else if !out.add(seq, c.raws[i]) {
				return out.err
			}
		}
		lim.candidates = max(lim.candidates, min(lim.candidates*4, queryChunk)) // ×4, without overflowing
	}
	out.flush()
	return out.err
}

// eachValue calls fn with every value dimension d has a sub-bucket for, in
// order, reading the names a chunk per read transaction.
func (s *Store) eachValue(d dim, fn func(value string) error) error {
	var after []byte // the last value read, nil before the first chunk
	for {
		var values []string
		if err := s.view(func(btx *bolt.Tx) error {
			c := btx.Bucket(d.bucket).Cursor()
			k, _ := c.First()
			if after != nil {
				if k, _ = c.Seek(after); bytes.Equal(k, after) {
					k, _ = c.Next()
				}
			}
			for ; k != nil && len(values) < queryChunk; k, _ = c.Next() {
				values = append(values, string(k))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, v := range values {
			if err := fn(v); err != nil {
				return err
			}
		}
		if len(values) < queryChunk {
			return nil
		}
		after = []byte(values[len(values)-1])
	}
}
