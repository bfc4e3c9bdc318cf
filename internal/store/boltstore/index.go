package boltstore

// Secondary indexes over the receipt log, written in the same commit as the
// receipts they index, so a query never sees a receipt without its index
// entries or the reverse.
//
// Layout (every seq key is 8 bytes big-endian, so bbolt keeps it in order):
//
//	ix_ts                 seq → timestamp (unix ms, 8 bytes): every receipt
//	ix_d / <verdict>      seq → timestamp   (sub-bucket per decision verdict)
//	ix_g / <guard>        seq → timestamp   (denying guard)
//	ix_s / <tool_server>  seq → timestamp
//	ix_t / <tool_name>    seq → timestamp
//	ix_u / <subject>      seq → timestamp   (agent key)
//	ix_m / <metadata key> seq → timestamp   (key presence: approver, auto_approved, …)
//	ix_long / <dim byte>  seq → timestamp   (the receipt's value for d, d,g,s,t,u,
//	                                         is longer than MaxIndexedValue: in no
//	                                         sub-bucket, so stats decode these)
//	ix_count              <dim> 0x00 <value> → number of entries (picks the most selective)
//	ix_blocks             seq>>10 → min ts, max ts of that block of 1024 seqs
//	ix_meta               "through" → last indexed seq
//
// A query walks the smallest matching sub-bucket in seq order (so cursor
// paging stays by seq), restricted to the seq blocks whose time span meets
// the --since/--until window; it checks the time from the entry's value,
// the other equality filters by membership in their sub-buckets (one Get
// each), and decodes a receipt only when a filter needs more (a metadata
// value, a request id) or the caller wants the fields (stats).
//
// Timestamps are only nearly increasing in seq (a receipt is stamped when
// decided and numbered when committed), which is why time is a filter on
// blocks and entries, not a seq range.
//
// Batched indexing. Writing a receipt's entries dirties about a page per
// index sub-bucket, and a commit's cost is mostly its pages: written,
// then flushed by two fsyncs. So a commit does not index its own receipts;
// the index catches up in batches (ix_meta's "through" is where it stands):
//
//   - the commit that finds IndexLag or more receipts unindexed indexes
//     all of them (the committer keeps their indexed fields in memory
//     until then);
//   - every reader of the index (QueryReceipts, ReceiptStats, Export)
//     first has it brought up to the last committed receipt, by a commit
//     of its own (syncIndex), so an auditor always sees every receipt
//     committed before the question;
//   - Open indexes whatever a shutdown or a crash left unindexed
//     (catchUp), and so does a store reopened after a failed commit.
//
// The receipts themselves, their ids and leaf hashes are written by the
// commit that carries them, as before: only the derived index trails.

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

var (
	bucketIxTS     = []byte("ix_ts")
	bucketIxCount  = []byte("ix_count")
	bucketIxBlocks = []byte("ix_blocks")
	bucketIxMeta   = []byte("ix_meta")
	// bucketIxLong is created by catchUp (not Open), which fills it for the
	// receipts an older build indexed: it exists only once it is complete.
	bucketIxLong = []byte("ix_long")
	keyThrough   = []byte("through")

	// Dimensions: the byte names the count key, the bucket holds one
	// sub-bucket per value.
	dimVerdict = dim{'d', []byte("ix_d")}
	dimGuard   = dim{'g', []byte("ix_g")}
	dimServer  = dim{'s', []byte("ix_s")}
	dimTool    = dim{'t', []byte("ix_t")}
	dimSubject = dim{'u', []byte("ix_u")}
	dimMeta    = dim{'m', []byte("ix_m")}
	allDims    = []dim{dimVerdict, dimGuard, dimServer, dimTool, dimSubject, dimMeta}

	indexBuckets = [][]byte{bucketIxTS, bucketIxCount, bucketIxBlocks, bucketIxMeta,
		dimVerdict.bucket, dimGuard.bucket, dimServer.bucket, dimTool.bucket, dimSubject.bucket, dimMeta.bucket}
)

type dim struct {
	id     byte
	bucket []byte
}

const (
	// blockShift sizes the time blocks: 1024 seqs each.
	blockShift = 10
	// appendFill packs pages of append-only buckets (bbolt's default 0.5
	// leaves them half empty when keys only ever grow).
	appendFill = 0.95
)

// appendCountKey appends d's count key for value to b.
func appendCountKey(b []byte, d dim, value string) []byte {
	return append(append(b, d.id, 0), value...)
}

// indexable reports whether a value gets a sub-bucket. Longer values are
// not indexed, and filters on them are checked on the decoded receipt.
func indexable(v string) bool { return v != "" && len(v) <= MaxIndexedValue }

// indexer writes one commit's index entries.
type indexer struct {
	btx    *bolt.Tx
	ts     *bolt.Bucket
	subs   map[string]*indexSub // by count key (markLong's: "long\x00" + dim)
	blocks map[uint64][2]int64
	last   uint64
}

// indexSub is a sub-bucket the commit writes to and, for a dimension's
// value, how many entries it added (flushed to ix_count).
type indexSub struct {
	b       *bolt.Bucket
	n       uint64
	counted bool
}

func newIndexer(btx *bolt.Tx) *indexer {
	ts := btx.Bucket(bucketIxTS)
	ts.FillPercent = appendFill
	return &indexer{btx: btx, ts: ts, subs: map[string]*indexSub{}, blocks: map[uint64][2]int64{}}
}

// indexEntry is what the index keeps of one receipt, copied out of it so
// that a receipt waiting to be indexed (Store.unindexed) shares nothing
// with the kernel's objects.
type indexEntry struct {
	seq                                   uint64
	ts                                    int64
	verdict, guard, server, tool, subject string
	meta                                  []string // metadata keys
}

func entryOf(seq uint64, r *receipt.Receipt) indexEntry {
	e := indexEntry{seq: seq, ts: r.Timestamp, verdict: r.Decision.Verdict, guard: r.Decision.Guard,
		server: r.ToolServer, tool: r.ToolName, subject: r.Subject}
	if len(r.Metadata) > 0 {
		e.meta = make([]string, 0, len(r.Metadata))
		for key := range r.Metadata {
			e.meta = append(e.meta, key)
		}
	}
	return e
}

func (ix *indexer) add(r indexEntry) error {
	seq := r.seq
	k, v := seqKey(seq), seqKey(uint64(r.ts))
	if err := ix.ts.Put(k, v); err != nil {
		return err
	}
	put := func(d dim, value string) error {
		if !indexable(value) {
			if value == "" || d.id == dimMeta.id {
				return nil
			}
			return ix.markLong(d, k, v)
		}
		// The key is built on the stack: a value seen before in this
		// commit (the usual case) allocates nothing to be found.
		var buf [2 + MaxIndexedValue]byte
		ck := appendCountKey(buf[:0], d, value)
		sub := ix.subs[string(ck)]
		if sub == nil {
			b, err := ix.btx.Bucket(d.bucket).CreateBucketIfNotExists([]byte(value))
			if err != nil {
				return fmt.Errorf("boltstore: index %s: %w", d.bucket, err)
			}
			b.FillPercent = appendFill
			sub = &indexSub{b: b, counted: true}
			ix.subs[string(ck)] = sub
		}
		sub.n++
		return sub.b.Put(k, v)
	}
	for _, e := range []struct {
		d dim
		v string
	}{{dimVerdict, r.verdict}, {dimGuard, r.guard}, {dimServer, r.server},
		{dimTool, r.tool}, {dimSubject, r.subject}} {
		if err := put(e.d, e.v); err != nil {
			return err
		}
	}
	for _, key := range r.meta {
		if err := put(dimMeta, key); err != nil {
			return err
		}
	}
	b := seq >> blockShift
	span, ok := ix.blocks[b]
	if !ok {
		span = [2]int64{math.MaxInt64, math.MinInt64}
		if old := ix.btx.Bucket(bucketIxBlocks).Get(seqKey(b)); len(old) == 16 {
			span = [2]int64{int64(binary.BigEndian.Uint64(old)), int64(binary.BigEndian.Uint64(old[8:]))}
		}
	}
	ix.blocks[b] = [2]int64{min(span[0], r.ts), max(span[1], r.ts)}
	ix.last = max(ix.last, seq)
	return nil
}

// markLong records that the receipt at seq key k has a value for d too
// long to index, so that stats grouped by d can find and decode it.
func (ix *indexer) markLong(d dim, k, v []byte) error {
	ck := "long\x00" + string(d.id)
	sub := ix.subs[ck]
	if sub == nil {
		b, err := ix.btx.Bucket(bucketIxLong).CreateBucketIfNotExists([]byte{d.id})
		if err != nil {
			return fmt.Errorf("boltstore: index %s: %w", bucketIxLong, err)
		}
		b.FillPercent = appendFill
		sub = &indexSub{b: b}
		ix.subs[ck] = sub
	}
	return sub.b.Put(k, v)
}

// longValues is the bucket of receipts whose value for d is too long to
// index, or nil if there are none.
func longValues(btx *bolt.Tx, d dim) *bolt.Bucket {
	return btx.Bucket(bucketIxLong).Bucket([]byte{d.id})
}

// flush writes the commit's counters, block spans and high-water mark.
func (ix *indexer) flush() error {
	cb := ix.btx.Bucket(bucketIxCount)
	for k, sub := range ix.subs {
		if !sub.counted {
			continue
		}
		n := sub.n
		var cur uint64
		if v := cb.Get([]byte(k)); len(v) == 8 {
			cur = binary.BigEndian.Uint64(v)
		}
		if err := cb.Put([]byte(k), seqKey(cur+n)); err != nil {
			return err
		}
	}
	bb := ix.btx.Bucket(bucketIxBlocks)
	for b, span := range ix.blocks {
		v := make([]byte, 16)
		binary.BigEndian.PutUint64(v, uint64(span[0]))
		binary.BigEndian.PutUint64(v[8:], uint64(span[1]))
		if err := bb.Put(seqKey(b), v); err != nil {
			return err
		}
	}
	if ix.last == 0 {
		return nil
	}
	return ix.btx.Bucket(bucketIxMeta).Put(keyThrough, seqKey(ix.last))
}

// indexTail, inside a commit, indexes the unindexed receipts and t's own
// when the index is due: IndexLag of them are waiting, or a reader asked.
func (s *Store) indexTail(t *tx) error {
	waiting := len(s.unindexed) + len(t.appended)
	t.indexes = waiting > 0 && (t.indexAll || waiting >= IndexLag)
	if !t.indexes {
		return nil
	}
	own := make([]indexEntry, len(t.appended))
	for i, a := range t.appended {
		own[i] = entryOf(a.Receipt.Seq, a.Receipt)
	}
	return writeIndex(t.btx, s.unindexed, own)
}

// writeIndex writes the entries' index records, in order, and how far the
// index now reaches.
func writeIndex(btx *bolt.Tx, batches ...[]indexEntry) error {
	ix := newIndexer(btx)
	for _, es := range batches {
		for _, e := range es {
			if err := ix.add(e); err != nil {
				return err
			}
		}
	}
	return ix.flush()
}

// committedIndex, after t is durable, records what it left unindexed or
// that the index now covers everything through t.last.
func (s *Store) committedIndex(t *tx) {
	if t.indexes {
		s.unindexed = s.unindexed[:0]
		s.indexed.Store(t.last)
		return
	}
	for _, a := range t.appended {
		s.unindexed = append(s.unindexed, entryOf(a.Receipt.Seq, a.Receipt))
	}
}

// indexUnindexed indexes the receipts still waiting, in a transaction of
// its own, once the committer has stopped (Close).
func (s *Store) indexUnindexed() error {
	if len(s.unindexed) == 0 || s.failed.Load() != nil {
		return nil
	}
	err := s.db.Update(func(btx *bolt.Tx) error { return writeIndex(btx, s.unindexed) })
	if err == nil {
		s.unindexed = nil
		s.indexed.Store(s.lastSeq.Load())
	}
	return err
}

// syncIndex brings the index up to every receipt committed before it was
// called, by queueing a commit that indexes the rest (a no-op when none
// is waiting). A store that cannot commit cannot answer from a partial
// index either: the reader gets its error.
func (s *Store) syncIndex() error {
	if s.indexed.Load() >= s.lastSeq.Load() {
		return nil
	}
	return s.Update(context.Background(), func(kt kernel.Tx) error {
		kt.(*tx).indexAll = true
		return nil
	})
}

// indexedThrough reads how far the index reaches, as of btx.
func indexedThrough(btx *bolt.Tx) uint64 {
	if v := btx.Bucket(bucketIxMeta).Get(keyThrough); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// catchUp indexes the receipts the index does not cover yet, in bounded
// transactions, before the store serves: the last (fewer than IndexLag +
// MaxBatch) of a store that crashed, or a whole store written by a build
// that kept no index. That build kept no leaf hashes either, so leaves
// missing at the END of the leaves bucket are computed too; a hole before
// its end is corruption and is left for loadLeaves to refuse.
//
// A stored receipt that does not decode is not indexed (queries cannot
// match it) but does not stop the store: `chio receipt verify` reports it.
func catchUp(db *bolt.DB) error {
	if err := db.Update(markLongValues); err != nil {
		return fmt.Errorf("boltstore: index over-long values: %w", err)
	}
	for {
		done := true
		err := db.Update(func(btx *bolt.Tx) error {
			through := indexedThrough(btx)
			ix := newIndexer(btx)
			lb := btx.Bucket(bucketLeaves)
			var leavesEnd uint64
			if k, _ := lb.Cursor().Last(); k != nil {
				leavesEnd = binary.BigEndian.Uint64(k)
			}
			c := btx.Bucket(bucketReceipts).Cursor()
			n := 0
			for k, raw := c.Seek(seqKey(through + 1)); k != nil; k, raw = c.Next() {
				if n == 20000 {
					done = false
					break
				}
				n++
				seq := binary.BigEndian.Uint64(k)
				if seq > leavesEnd {
					leaf := receipt.LeafHash(raw)
					if err := lb.Put(k, leaf[:]); err != nil {
						return err
					}
				}
				r, err := receipt.Decode(raw)
				if err != nil {
					slog.Warn("a stored receipt does not decode: not indexed (chio receipt verify reports it)", "seq", seq, "err", err)
					ix.last = max(ix.last, seq)
					continue
				}
				if err := ix.add(entryOf(seq, r)); err != nil {
					return err
				}
			}
			return ix.flush()
		})
		if err != nil || done {
			return err
		}
	}
}

// markLongValues creates ix_long in a store indexed by a build that kept no
// such bucket, filling it from every receipt indexed so far, in the same
// transaction: a crash leaves either no bucket (done again at next Open) or
// a complete one. A store that has it already is left alone.
func markLongValues(btx *bolt.Tx) error {
	if btx.Bucket(bucketIxLong) != nil {
		return nil
	}
	if _, err := btx.CreateBucket(bucketIxLong); err != nil {
		return err
	}
	through := indexedThrough(btx)
	ix := newIndexer(btx)
	c := btx.Bucket(bucketReceipts).Cursor()
	for k, raw := c.First(); k != nil && binary.BigEndian.Uint64(k) <= through; k, raw = c.Next() {
		r, err := receipt.Decode(raw)
		if err != nil {
			continue // not indexed either (catchUp)
		}
		v := seqKey(uint64(r.Timestamp))
		for _, e := range []struct {
			d dim
			v string
		}{{dimVerdict, r.Decision.Verdict}, {dimGuard, r.Decision.Guard}, {dimServer, r.ToolServer},
			{dimTool, r.ToolName}, {dimSubject, r.Subject}} {
			if e.v != "" && !indexable(e.v) {
				if err := ix.markLong(e.d, k, v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
