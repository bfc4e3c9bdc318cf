package boltstore

import (
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
//
// Every one of these reads is a scan in short read transactions (scan.go),
// all as of the same end, fixed first: so they count the same receipts,
// as one transaction would have.
func (s *Store) ReceiptStats(f receipt.Filter, groupBy string) (receipt.StatsResult, error) {
	st, err := receipt.NewStats(groupBy)
	if err != nil {
		return receipt.StatsResult{}, err
	}
	if err := s.syncIndex(); err != nil {
		return receipt.StatsResult{}, err
	}
	end, err := s.queryEnd()
	if err != nil {
		return receipt.StatsResult{}, err
	}
	if err := s.stats(end, f, groupBy, st); err != nil {
		return receipt.StatsResult{}, err
	}
	return st.Result(), nil
}

// stats adds to st the receipts up to end that match f.
func (s *Store) stats(end uint64, f receipt.Filter, groupBy string, st *receipt.Stats) error {
	decoded := func(f receipt.Filter, opt *scanOpts, fn func(*receipt.Receipt)) error {
		return s.scan(end, receipt.Query{Filter: f, Decode: true}, opt, func(_ uint64, _ []byte, r *receipt.Receipt) bool {
			fn(r)
			return true
		})
	}
	if !indexCovers(&f) || !indexable(strings.TrimPrefix(groupBy, "metadata.")) {
		return decoded(f, nil, st.Add)
	}
	count := func(f receipt.Filter) (uint64, error) {
		var n uint64
		err := s.scan(end, receipt.Query{Filter: f}, &scanOpts{keysOnly: true}, func(uint64, []byte, *receipt.Receipt) bool { n++; return true })
		return n, err
	}
	total, err := count(f)
	if err != nil {
		return err
	}
	var exclude []bucketRef // receipts whose latency is already counted
	switch sd, indexed := statsDims[groupBy]; {
	case groupBy == "":
		st.Count("all", total)
	case indexed:
		var sum uint64
		fixed := *sd.set(&f)
		err := s.eachValue(sd.d, func(value string) error {
			if fixed != "" && fixed != value {
				return nil // the filter already pins this field
			}
			g := f
			*sd.set(&g) = value
			n, err := count(g)
			st.Count(value, n) // a value only receipts after end have counts 0: no group
			sum += n
			return err
		})
		if err != nil {
			return err
		}
		// Values too long to index: the receipts listed for them, decoded.
		long := func(btx *bolt.Tx) *bolt.Bucket { return longValues(btx, sd.d) }
		err = decoded(f, &scanOpts{driver: long}, func(r *receipt.Receipt) {
			st.Add(r)
			sum++
		})
		if err != nil {
			return err
		}
		exclude = append(exclude, long)     // their latency is counted by Add
		st.Count("", total-min(sum, total)) // no value for the field (e.g. no guard)
	default: // metadata.KEY
		key := strings.TrimPrefix(groupBy, "metadata.")
		g := f
		g.Meta = append(append([]receipt.MetaFilter(nil), f.Meta...), receipt.MetaFilter{Key: key})
		var with uint64
		err := decoded(g, nil, func(r *receipt.Receipt) {
			st.Add(r)
			with++
		})
		if err != nil {
			return err
		}
		st.Count("", total-min(with, total))
		exclude = append(exclude, func(btx *bolt.Tx) *bolt.Bucket { return btx.Bucket(dimMeta.bucket).Bucket([]byte(key)) })
	}
	g := f
	g.Meta = append(append([]receipt.MetaFilter(nil), f.Meta...), receipt.MetaFilter{Key: receipt.LatencyKey})
	return decoded(g, &scanOpts{exclude: exclude}, st.AddLatency)
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
