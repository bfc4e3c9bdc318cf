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

// QueryReceipts answers q from the indexes (see index.go) in one read
// transaction, once they cover every receipt committed before the call.
func (s *Store) QueryReceipts(q receipt.Query, fn func(seq uint64, raw []byte, r *receipt.Receipt) bool) error {
	if err := s.syncIndex(); err != nil {
		return err
	}
	return s.view(func(btx *bolt.Tx) error { return runQuery(btx, q, nil, fn) })
}

// seqRange is an inclusive range of seqs.
type seqRange struct{ lo, hi uint64 }

// scanOpts are what stats need beyond receipt.Query.
type scanOpts struct {
	exclude  []*bolt.Bucket // skip seqs present in any of these
	keysOnly bool           // count: fn gets no bytes (only for index-covered filters)
}

// runQuery runs q, calling fn for every match.
func runQuery(btx *bolt.Tx, q receipt.Query, opt *scanOpts, fn func(uint64, []byte, *receipt.Receipt) bool) error {
	if opt == nil {
		opt = &scanOpts{}
	}
	f := &q.Filter
	decode := q.Decode || f.RequestID != ""
	type term struct {
		sub   *bolt.Bucket
		count uint64
	}
	var terms []term
	empty := false
	use := func(d dim, value string) {
		if value == "" || empty {
			return
		}
		if !indexable(value) {
			decode = true // checked on the decoded receipt
			return
		}
		sub := btx.Bucket(d.bucket).Bucket([]byte(value))
		if sub == nil {
			empty = true // no receipt has this value
			return
		}
		var n uint64
		if v := btx.Bucket(bucketIxCount).Get(countKey(d, value)); len(v) == 8 {
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
		decode = decode || m.HasValue
	}
	if empty {
		return nil
	}
	if decode && opt.keysOnly {
		return fmt.Errorf("boltstore: a count needs a filter the indexes answer")
	}
	// Walk the most selective index; the others are membership checks.
	sort.Slice(terms, func(i, j int) bool { return terms[i].count < terms[j].count })
	driver := btx.Bucket(bucketIxTS)
	if len(terms) > 0 {
		driver = terms[0].sub
		terms = terms[1:]
	}
	others := make([]*member, len(terms))
	for i, t := range terms {
		others[i] = newMember(t.sub, q.Desc)
	}
	excluded := make([]*member, len(opt.exclude))
	for i, b := range opt.exclude {
		excluded[i] = newMember(b, q.Desc)
	}
	ranges := queryRanges(btx, q)
	receipts := btx.Bucket(bucketReceipts)
	out := &emitter{filter: f, fn: fn, decode: decode, batch: 16}
	c := driver.Cursor()
	visit := func(k, v []byte) bool {
		if len(v) == 8 {
			ts := int64(binary.BigEndian.Uint64(v))
			if f.Since != 0 && ts < f.Since || f.Until != 0 && ts >= f.Until {
				return true
			}
		}
		for _, o := range others {
			if !o.has(k) {
				return true
			}
		}
		for _, x := range excluded {
			if x.has(k) {
				return true
			}
		}
		if opt.keysOnly {
			return fn(binary.BigEndian.Uint64(k), nil, nil)
		}
		raw := receipts.Get(k)
		if raw == nil {
			out.err = fmt.Errorf("boltstore: index names seq %d, which is not stored", binary.BigEndian.Uint64(k))
			return false
		}
		return out.add(binary.BigEndian.Uint64(k), raw)
	}
	if q.Desc {
		for i := len(ranges) - 1; i >= 0; i-- {
			r := ranges[i]
			var k, v []byte
			if r.hi == math.MaxUint64 {
				k, v = c.Last()
			} else if k, v = c.Seek(seqKey(r.hi + 1)); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
			for ; k != nil && binary.BigEndian.Uint64(k) >= r.lo; k, v = c.Prev() {
				if !visit(k, v) {
					return out.err
				}
			}
		}
	} else {
		for _, r := range ranges {
			for k, v := c.Seek(seqKey(r.lo)); k != nil && binary.BigEndian.Uint64(k) <= r.hi; k, v = c.Next() {
				if !visit(k, v) {
					return out.err
				}
			}
		}
	}
	out.flush()
	return out.err
}

// queryRanges turns the cursor bounds and the time window into ascending,
// disjoint seq ranges: with a window, only the blocks whose time span meets
// it.
func queryRanges(btx *bolt.Tx, q receipt.Query) []seqRange {
	lo, hi := q.After+1, uint64(math.MaxUint64)
	if q.Before > 0 {
		hi = q.Before - 1
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
