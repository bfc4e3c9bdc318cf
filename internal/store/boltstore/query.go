package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/receipt"
)

var _ receipt.Index = (*Store)(nil)

// QueryReceipts answers q from the indexes (see index.go) as of its start,
// a chunk of short read transactions at a time (scan.go): every receipt
// committed before the call, none committed while it runs.
func (s *Store) QueryReceipts(q receipt.Query, fn func(seq uint64, raw []byte, r *receipt.Receipt) bool) error {
	if err := s.syncIndex(); err != nil {
		return err
	}
	end, err := s.queryEnd()
	if err != nil {
		return err
	}
	return s.scan(end, q, nil, fn)
}

// seqRange is an inclusive range of seqs.
type seqRange struct{ lo, hi uint64 }

// bucketRef names a bucket for a scan to open in each of its read
// transactions (a *bolt.Bucket is valid in one only). It may return nil.
type bucketRef func(*bolt.Tx) *bolt.Bucket

// scanOpts are what stats need beyond receipt.Query.
type scanOpts struct {
	exclude  []bucketRef // skip seqs present in any of these
	driver   bucketRef   // walk only the seqs in this bucket (then every filter is a membership check)
	keysOnly bool        // count: fn gets no bytes (only for index-covered filters)
}

// queryDecodes reports whether q's matches must be decoded: the caller
// wants the fields, or the filter needs more than the indexes hold.
func queryDecodes(q *receipt.Query) bool {
	f := &q.Filter
	decode := q.Decode || f.RequestID != ""
	for _, v := range []string{f.Decision, f.Guard, f.Server, f.Tool, f.Subject} {
		decode = decode || v != "" && !indexable(v) // checked on the decoded receipt
	}
	for _, m := range f.Meta {
		// The empty key is a filter too (receipt.Filter.Match: receipts
		// that have it), checked on the decoded receipt like a long key.
		decode = decode || m.HasValue || !indexable(m.Key)
	}
	return decode
}

// walker is a query's plan inside one read transaction: the index it
// walks (the most selective) and the ones it checks seqs against.
type walker struct {
	driver   *bolt.Bucket
	others   []*member
	excluded []*member
	receipts *bolt.Cursor
}

// newWalker plans q in btx; ok is false when no receipt can match (a
// filter value that no receipt has).
func newWalker(btx *bolt.Tx, q *receipt.Query, opt *scanOpts) (w *walker, ok bool) {
	f := &q.Filter
	type term struct {
		sub   *bolt.Bucket
		count uint64
	}
	var terms []term
	empty := false
	use := func(d dim, value string) {
		if !indexable(value) || empty {
			return // no filter, or one checked on the decoded receipt
		}
		sub := btx.Bucket(d.bucket).Bucket([]byte(value))
		if sub == nil {
			empty = true // no receipt has this value
			return
		}
		var n uint64
		if v := btx.Bucket(bucketIxCount).Get(appendCountKey(nil, d, value)); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		terms = append(terms, term{sub, n})
	}
	use(dimVerdict, f.Decision)
	use(dimGuard, f.Guard)
	use(dimServer, f.Server)
	use(dimTool, f.Tool)
	use(dimSubject, f.Subject)
	for _, m := range f.Meta {
		use(dimMeta, m.Key)
	}
	if empty {
		return nil, false
	}
	w = &walker{receipts: btx.Bucket(bucketReceipts).Cursor()}
	// Walk the most selective index; the others are membership checks.
	sort.Slice(terms, func(i, j int) bool { return terms[i].count < terms[j].count })
	switch {
	case opt.driver != nil:
		if w.driver = opt.driver(btx); w.driver == nil {
			return nil, false
		}
	case len(terms) > 0:
		w.driver, terms = terms[0].sub, terms[1:]
	default:
		w.driver = btx.Bucket(bucketIxTS)
	}
	for _, t := range terms {
		w.others = append(w.others, newMember(t.sub, q.Desc))
	}
	for _, ref := range opt.exclude {
		if b := ref(btx); b != nil {
			w.excluded = append(w.excluded, newMember(b, q.Desc))
		}
	}
	return w, true
}

// chunkLimit bounds what one read transaction of a scan does.
type chunkLimit struct {
	entries    int // index entries visited
	candidates int // receipts collected
	bytes      int // about this many bytes of them copied out
}

// chunk is what one read transaction of a scan collected: candidate seqs
// in the walk's order and their receipts, copied out of bbolt's memory
// (which is valid only inside the transaction); no receipts for keysOnly.
type chunk struct {
	seqs []uint64
	raws [][]byte
	size int
}

// readChunk walks q over ranges (ascending, disjoint; walked from the top
// with Desc) within lim, and returns what it collected and the ranges it
// has not walked yet (nil when done).
func readChunk(btx *bolt.Tx, q *receipt.Query, opt *scanOpts, ranges []seqRange, lim chunkLimit) (chunk, []seqRange, error) {
	var c chunk
	w, ok := newWalker(btx, q, opt)
	if !ok {
		return c, nil, nil
	}
	f := &q.Filter
	visited := 0
	full := func() bool { // never before the first entry: every chunk makes progress
		return visited > 0 && (visited >= lim.entries || len(c.seqs) >= lim.candidates || c.size >= lim.bytes)
	}
	visit := func(k, v []byte) error {
		visited++
		if len(v) == 8 {
			ts := int64(binary.BigEndian.Uint64(v))
			if f.Since != 0 && ts < f.Since || f.Until != 0 && ts >= f.Until {
				return nil
			}
		}
		for _, o := range w.others {
			if !o.has(k) {
				return nil
			}
		}
		for _, x := range w.excluded {
			if x.has(k) {
				return nil
			}
		}
		seq := binary.BigEndian.Uint64(k)
		if opt.keysOnly {
			c.seqs = append(c.seqs, seq)
			return nil
		}
		at, raw := w.receipts.Seek(k) // one cursor for every fetch: no allocation per Get
		if !bytes.Equal(at, k) || raw == nil {
			return fmt.Errorf("boltstore: index names seq %d, which is not stored", seq)
		}
		c.seqs, c.raws = append(c.seqs, seq), append(c.raws, bytes.Clone(raw))
		c.size += len(raw)
		return nil
	}
	cur := w.driver.Cursor()
	if q.Desc {
		for i := len(ranges) - 1; i >= 0; i-- {
			r := ranges[i]
			var k, v []byte
			if r.hi == math.MaxUint64 {
				k, v = cur.Last()
			} else if k, v = cur.Seek(seqKey(r.hi + 1)); k == nil {
				k, v = cur.Last()
			} else {
				k, v = cur.Prev()
			}
			for ; k != nil && binary.BigEndian.Uint64(k) >= r.lo; k, v = cur.Prev() {
				if full() { // resume at k: the ranges below it
					return c, append(ranges[:i:i], seqRange{r.lo, binary.BigEndian.Uint64(k)}), nil
				}
				if err := visit(k, v); err != nil {
					return c, nil, err
				}
			}
		}
	} else {
		for i, r := range ranges {
			for k, v := cur.Seek(seqKey(r.lo)); k != nil && binary.BigEndian.Uint64(k) <= r.hi; k, v = cur.Next() {
				if full() { // resume at k: the ranges above it
					return c, append([]seqRange{{binary.BigEndian.Uint64(k), r.hi}}, ranges[i+1:]...), nil
				}
				if err := visit(k, v); err != nil {
					return c, nil, err
				}
			}
		}
	}
	return c, nil, nil
}

// queryRanges turns the cursor bounds, the query's end and the time window
// into ascending, disjoint seq ranges: with a window, only the blocks whose
// time span meets it.
func queryRanges(btx *bolt.Tx, q *receipt.Query, end uint64) []seqRange {
	lo, hi := q.After+1, end
	if q.Before > 0 {
		hi = min(hi, q.Before-1)
	}
	if q.After == math.MaxUint64 || lo > hi {
		return nil
	}
	f := &q.Filter
	if f.Since == 0 && f.Until == 0 {
		return []seqRange{{lo, hi}}
	}
	var out []seqRange
	c := btx.Bucket(bucketIxBlocks).Cursor()
	for k, v := c.Seek(seqKey(lo >> blockShift)); k != nil; k, v = c.Next() {
		if len(v) != 16 {
			continue
		}
		b := binary.BigEndian.Uint64(k)
		first, last := b<<blockShift, (b+1)<<blockShift-1
		if first > hi {
			break
		}
		minTS, maxTS := int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
		if f.Since != 0 && maxTS < f.Since || f.Until != 0 && minTS >= f.Until {
			continue
		}
		r := seqRange{max(first, lo), min(last, hi)}
		if n := len(out); n > 0 && out[n-1].hi+1 == r.lo {
			out[n-1].hi = r.hi
		} else {
			out = append(out, r)
		}
	}
	return out
}

// emitter hands matches to the caller in order, decoding candidates in
// parallel batches when the filter or the caller needs the fields. Batches
// start small so that a short page does not decode much more than it shows.
type emitter struct {
	filter  *receipt.Filter
	fn      func(uint64, []byte, *receipt.Receipt) bool
	decode  bool
	batch   int
	seqs    []uint64
	raws    [][]byte
	stopped bool
	err     error
}

func (e *emitter) add(seq uint64, raw []byte) bool {
	if !e.decode {
		if !e.fn(seq, raw, nil) {
			e.stopped = true
		}
		return !e.stopped
	}
	e.seqs, e.raws = append(e.seqs, seq), append(e.raws, raw)
	if len(e.seqs) >= e.batch {
		e.flush()
		e.batch = min(e.batch*2, 1024)
	}
	return !e.stopped && e.err == nil
}

func (e *emitter) flush() {
	n := len(e.seqs)
	if n == 0 || e.stopped || e.err != nil {
		return
	}
	rs := make([]*receipt.Receipt, n)
	errs := make([]error, n)
	workers := min(runtime.GOMAXPROCS(0), (n+7)/8)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				rs[i], errs[i] = receipt.Decode(e.raws[i])
			}
		}(w)
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			e.err = fmt.Errorf("boltstore: stored receipt seq %d: %w", e.seqs[i], errs[i])
			return
		}
		if e.filter.Match(rs[i]) && !e.fn(e.seqs[i], e.raws[i], rs[i]) {
			e.stopped = true
			return
		}
	}
	e.seqs, e.raws = e.seqs[:0], e.raws[:0]
}

// member tests seqs for membership in a sub-bucket while the query walks in
// one direction: a cursor that moves forward with the walk (a few Next
// steps, or one Seek for a long jump) instead of a Get from the root for
// every candidate.
type member struct {
	c    *bolt.Cursor
	desc bool
	k    []byte
	init bool
}

func newMember(b *bolt.Bucket, desc bool) *member { return &member{c: b.Cursor(), desc: desc} }

func (m *member) has(k []byte) bool {
	behind := func() bool { // m.k is on the wrong side of k for this direction
		c := bytes.Compare(m.k, k)
		return m.desc && c > 0 || !m.desc && c < 0
	}
	if m.init && m.k != nil {
		for i := 0; i < 8 && behind(); i++ {
			if m.desc {
				m.k, _ = m.c.Prev()
			} else {
				m.k, _ = m.c.Next()
			}
			if m.k == nil {
				break
			}
		}
	}
	if !m.init || m.k != nil && behind() {
		m.init = true
		m.k, _ = m.c.Seek(k)
		if m.desc && (m.k == nil || !bytes.Equal(m.k, k)) {
			if m.k == nil {
				m.k, _ = m.c.Last()
			} else {
				m.k, _ = m.c.Prev()
			}
		}
	}
	return m.k != nil && bytes.Equal(m.k, k)
}
