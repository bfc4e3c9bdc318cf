package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/chiokernel/chio/receipt"
)

var _ receipt.StatsIndex = (*Store)(nil)

// statsColumns maps group_by fields to their column and the receipt field
// a synthetic receipt carries it in (for receipt.Stats' grouping).
var statsColumns = map[string]struct {
	col string
	set func(*receipt.Receipt, string)
}{
	"decision":    {"verdict", func(r *receipt.Receipt, v string) { r.Decision.Verdict = v }},
	"guard":       {"guard", func(r *receipt.Receipt, v string) { r.Decision.Guard = v }},
	"tool_server": {"server", func(r *receipt.Receipt, v string) { r.ToolServer = v }},
	"tool_name":   {"tool", func(r *receipt.Receipt, v string) { r.ToolName = v }},
	"subject":     {"subject", func(r *receipt.Receipt, v string) { r.Subject = v }},
}

// ReceiptStats counts in SQL instead of decoding every receipt: totals and
// groups of an indexed field are GROUP BY counts; approval latency comes
// from its column; a metadata.KEY group decodes only the receipts carrying
// KEY. A filter on a metadata value decodes every match (the value is not
// a column).
//
// Every one of these statements reads up to the same end, the log head
// read first (logEnd): they count the same receipts, as of the start, as
// one snapshot would have.
func (s *Store) ReceiptStats(f receipt.Filter, groupBy string) (receipt.StatsResult, error) {
	st, err := receipt.NewStats(groupBy)
	if err != nil {
		return receipt.StatsResult{}, err
	}
	ctx, cancel := context.WithTimeout(s.bg, 10*ReadTimeout)
	defer cancel()
	end, err := s.logEnd(ctx)
	if err != nil {
		return receipt.StatsResult{}, err
	}
	w := filterSQL(&f)
	if w.decode {
		err := s.queryTo(ctx, end, receipt.Query{Filter: f, Decode: true}, func(_ uint64, _ []byte, r *receipt.Receipt) bool {
			st.Add(r)
			return true
		})
		if err != nil {
			return receipt.StatsResult{}, err
		}
		return st.Result(), nil
	}
	w.add("seq <= ?", end)
	if err := s.stats(ctx, st, end, f, w, groupBy); err != nil {
		return receipt.StatsResult{}, fmt.Errorf("pgstore: stats: %w", err)
	}
	return st.Result(), nil
}

// stats adds to st the receipts up to end that match f (w: f and end as SQL).
func (s *Store) stats(ctx context.Context, st *receipt.Stats, end int64, f receipt.Filter, w *where, groupBy string) error {
	cond, args := w.sql(), w.args
	sc, indexed := statsColumns[groupBy]
	switch {
	case groupBy == "":
		var n int64
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM chio_receipts WHERE "+cond, args...).Scan(&n); err != nil {
			return err
		}
		st.Count("all", uint64(n))
		return s.latencies(ctx, st, "NULL::bytea", cond, args, nil)
	case indexed:
		rows, err := s.pool.Query(ctx, "SELECT "+sc.col+", count(*) FROM chio_receipts WHERE "+cond+" GROUP BY "+sc.col, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var v []byte
			var n int64
			if err := rows.Scan(&v, &n); err != nil {
				rows.Close()
				return err
			}
			st.Count(string(v), uint64(n))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return s.latencies(ctx, st, sc.col, cond, args, sc.set)
	}
	// metadata.KEY: decode the receipts carrying KEY; the rest are one group.
	key := strings.TrimPrefix(groupBy, "metadata.")
	var total int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM chio_receipts WHERE "+cond, args...).Scan(&total); err != nil {
		return err
	}
	g := f
	g.Meta = append(append([]receipt.MetaFilter(nil), f.Meta...), receipt.MetaFilter{Key: key})
	var with int64
	err := s.queryTo(ctx, end, receipt.Query{Filter: g, Decode: true}, func(_ uint64, _ []byte, r *receipt.Receipt) bool {
		st.Add(r)
		with++
		return true
	})
	if err != nil {
		return err
	}
	st.Count("", uint64(total-min(with, total)))
	without := &where{conds: append([]string(nil), w.conds...), args: append([]any(nil), w.args...)}
	without.add("NOT (meta_keys @> ?::bytea[])", [][]byte{[]byte(key)})
	return s.latencies(ctx, st, "NULL::bytea", without.sql(), without.args, nil)
}

// latencies feeds the approval latency of every matching receipt that has
// one into its group, as a receipt carrying only that group's field.
func (s *Store) latencies(ctx context.Context, st *receipt.Stats, col, cond string, args []any, set func(*receipt.Receipt, string)) error {
	if s.beforeLatencies != nil {
		s.beforeLatencies()
	}
	rows, err := s.pool.Query(ctx, "SELECT "+col+", latency_ms FROM chio_receipts WHERE "+cond+" AND latency_ms IS NOT NULL", args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v []byte
		var ms float64
		if err := rows.Scan(&v, &ms); err != nil {
			return err
		}
		r := &receipt.Receipt{Metadata: map[string]any{receipt.LatencyKey: ms}}
		if set != nil {
			set(r, string(v))
		}
		st.AddLatency(r)
	}
	return rows.Err()
}
