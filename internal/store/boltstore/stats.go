package boltstore

import (
	"encoding/binary"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/receipt"
)

var _ receipt.StatsIndex = (*Store)(nil)

// statsDims maps group_by fields to their index dimension and filter field.
var statsDims = map[string]struct {
	d   dim
	set func(*receipt.Filter) *string
}{
	"decision":    {dimVerdict, func(f *receipt.Filter) *string { return &f.Decision }},
	"guard":       {dimGuard, func(f *receipt.Filter) *string { return &f.Guard }},
	"tool_server": {dimServer, func(f *receipt.Filter) *string { return &f.Server }},
	"tool_name":   {dimTool, func(f *receipt.Filter) *string { return &f.Tool }},
	"subject":     {dimSubject, func(f *receipt.Filter) *string { return &f.Subject }},
}

// ReceiptStats counts from the indexes instead of decoding every receipt:
//
//   - the filter's total, and each group of an indexed field (decision,
//     guard, tool_server, tool_name, subject), are counts of index entries;
//     a value longer than MaxIndexedValue has no index entries, so the
//     receipts holding one (listed in ix_long) are decoded and grouped under
//     their value, as a full scan would;
//   - a metadata.KEY group needs KEY's value, so only receipts carrying KEY
//     are decoded (the rest form the "" group);
//   - latency is read from the receipts carrying approval_latency_ms only.
//
// A filter the indexes do not answer alone (request_id, a metadata value)
// falls back to decoding every match.
func (s *Store) ReceiptStats(f receipt.Filter, groupBy string) (receipt.StatsResult, error) {
	st, err := receipt.NewStats(groupBy)
	if err != nil {
		return receipt.StatsResult{}, err
	}
	if err := s.syncIndex(); err != nil {
		return receipt.StatsResult{}, err
	}
	err = s.view(func(btx *bolt.Tx) error {
		if !indexCovers(&f) || !indexable(strings.TrimPrefix(groupBy, "metadata.")) {
			return runQuery(btx, receipt.Query{Filter: f, Decode: true}, nil, func(_ uint64, _ []byte, r *receipt.Receipt) bool {
				st.Add(r)
				return true
			})
		}
		count := func(f receipt.Filter) (uint64, error) {
			var n uint64
			err := runQuery(btx, receipt.Query{Filter: f}, &scanOpts{keysOnly: true}, func(uint64, []byte, *receipt.Receipt) bool { n++; return true })
			return n, err
		}
		total, err := count(f)
		if err != nil {
			return err
		}
		var exclude []*bolt.Bucket // receipts whose latency is already counted
		switch sd, indexed := statsDims[groupBy]; {
		case groupBy == "":
			st.Count("all", total)
		case indexed:
			var sum uint64
			fixed := *sd.set(&f)
			err := btx.Bucket(sd.d.bucket).ForEach(func(value, _ []byte) error {
				if fixed != "" && fixed != string(value) {
					return nil // the filter already pins this field
				}
				g := f
				*sd.set(&g) = string(value)
				n, err := count(g)
				st.Count(string(value), n)
				sum += n
				return err
			})
			if err != nil {
				return err
			}
			if long := longValues(btx, sd.d); long != nil {
				n, err := addLong(btx, long, &f, st)
				if err != nil {
					return err
				}
				sum += n
				exclude = append(exclude, long) // their latency is counted by Add
			}
			st.Count("", total-min(sum, total)) // no value for the field (e.g. no guard)
		default: // metadata.KEY
			key := strings.TrimPrefix(groupBy, "metadata.")
			g := f
			g.Meta = append(append([]receipt.MetaFilter(nil), f.Meta...), receipt.MetaFilter{Key: key})
			var with uint64
			err := runQuery(btx, receipt.Query{Filter: g, Decode: true}, nil, func(_ uint64, _ []byte, r *receipt.Receipt) bool {
				st.Add(r)
				with++
				return true
			})
			if err != nil {
				return err
			}
			st.Count("", total-min(with, total))
			if sub := btx.Bucket(dimMeta.bucket).Bucket([]byte(key)); sub != nil {
				exclude = append(exclude, sub)
			}
		}
		g := f
		g.Meta = append(append([]receipt.MetaFilter(nil), f.Meta...), receipt.MetaFilter{Key: receipt.LatencyKey})
		return runQuery(btx, receipt.Query{Filter: g, Decode: true}, &scanOpts{exclude: exclude}, func(_ uint64, _ []byte, r *receipt.Receipt) bool {
			st.AddLatency(r)
			return true
		})
	})
	if err != nil {
		return receipt.StatsResult{}, err
	}
	return st.Result(), nil
}

// addLong adds to st every receipt listed in long (values too long to index)
// that matches f, decoded, and returns how many it added.
func addLong(btx *bolt.Tx, long *bolt.Bucket, f *receipt.Filter, st *receipt.Stats) (uint64, error) {
	var n uint64
	rb := btx.Bucket(bucketReceipts)
	err := long.ForEach(func(k, _ []byte) error {
		r, err := receipt.Decode(rb.Get(k))
		if err != nil {
			return fmt.Errorf("boltstore: stats: receipt seq %d: %w", binary.BigEndian.Uint64(k), err)
		}
		if f.Match(r) {
			st.Add(r)
			n++
		}
		return nil
	})
	return n, err
}

// indexCovers reports whether the indexes alone answer f.
func indexCovers(f *receipt.Filter) bool {
	if f.RequestID != "" {
		return false
	}
	for _, v := range []string{f.Decision, f.Guard, f.Server, f.Tool, f.Subject} {
		if v != "" && !indexable(v) {
			return false
		}
	}
	for _, m := range f.Meta {
		if m.HasValue || !indexable(m.Key) {
			return false
		}
	}
	return true
}
