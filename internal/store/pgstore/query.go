package pgstore

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/chiokernel/chio/receipt"
)

var _ receipt.Index = (*Store)(nil)

// where is a filter as SQL over chio_receipts' indexed columns, plus what
// only the decoded receipt can answer.
type where struct {
	conds  []string
	args   []any
	decode bool // a metadata value (or the caller) needs the receipt decoded
}

func (w *where) add(cond string, arg any) {
	w.args = append(w.args, arg)
	w.conds = append(w.conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(w.args))))
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return "TRUE"
	}
	return strings.Join(w.conds, " AND ")
}

// filterSQL turns f into conditions. Every equality is on an indexed
// column; metadata keys use the GIN index; a metadata value is checked on
// the decoded receipt (receipt.Filter.Match, the one definition of a match).
func filterSQL(f *receipt.Filter) *where {
	w := &where{}
	for _, c := range []struct{ col, v string }{{"verdict", f.Decision}, {"guard", f.Guard}, {"server", f.Server},
		{"tool", f.Tool}, {"subject", f.Subject}, {"request_id", f.RequestID}} {
		if c.v != "" {
			w.add(c.col+" = ?", []byte(c.v))
		}
	}
	var keys [][]byte
	for _, m := range f.Meta {
		keys = append(keys, []byte(m.Key))
		w.decode = w.decode || m.HasValue
	}
	if len(keys) > 0 {
		w.add("meta_keys @> ?::bytea[]", keys)
	}
	if f.Since != 0 {
		w.add("ts >= ?", f.Since)
	}
	if f.Until != 0 {
		w.add("ts < ?", f.Until)
	}
	return w
}

// seqWindow narrows a time window to the seqs that fall in it, so the
// query walks seq order inside it instead of from the start of the log
// (timestamps only nearly increase with seq, so this is the exact range of
// seqs whose receipts are in the window, read through the ts index).
func (s *Store) seqWindow(ctx context.Context, f *receipt.Filter, w *where) (bool, error) {
	if f.Since == 0 && f.Until == 0 {
		return true, nil
	}
	tw := &where{}
	if f.Since != 0 {
		tw.add("ts >= ?", f.Since)
	}
	if f.Until != 0 {
		tw.add("ts < ?", f.Until)
	}
	var lo, hi *int64
	if err := s.pool.QueryRow(ctx, "SELECT min(seq), max(seq) FROM chio_receipts WHERE "+tw.sql(), tw.args...).Scan(&lo, &hi); err != nil {
		return false, err
	}
	if lo == nil {
		return false, nil
	}
	w.add("seq >= ?", *lo)
	w.add("seq <= ?", *hi)
	return true, nil
}

// logEnd is the seq a listing or stats started now answer as of: the log
// head's. Every receipt up to it is committed, and visible to every later
// statement: a transaction numbers its receipts under the head's row lock,
// advancing the head and inserting them together, and holds that lock until
// it commits (flush.go) — so no seq at or below a committed head is still
// to come, and a later commit only adds seqs above it. Reading each page up
// to the end is then what one snapshot at the start would have read,
// without holding a snapshot open (and vacuum back) for a long listing.
func (s *Store) logEnd(ctx context.Context) (int64, error) {
	end, err := lastSeq(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("pgstore: read the log head: %w", err)
	}
	return int64(min(end, math.MaxInt64)), nil
}

// QueryReceipts answers q as of its start (logEnd: every receipt committed
// before the call, none committed while it runs), in seq order (reversed
// with Desc), a page of rows per query (pages grow, so a short listing
// reads little), decoding only what the filter or the caller needs.
func (s *Store) QueryReceipts(q receipt.Query, fn func(seq uint64, raw []byte, r *receipt.Receipt) bool) error {
	ctx, cancel := context.WithTimeout(s.bg, 10*ReadTimeout)
	defer cancel()
	end, err := s.logEnd(ctx)
	if err != nil {
		return err
	}
	return s.queryTo(ctx, end, q, fn)
}

// queryTo answers q over the receipts up to seq end.
func (s *Store) queryTo(ctx context.Context, end int64, q receipt.Query, fn func(seq uint64, raw []byte, r *receipt.Receipt) bool) error {
	if q.After >= math.MaxInt64 {
		return nil
	}
	f := &q.Filter
	w := filterSQL(f)
	w.add("seq <= ?", end)
	if ok, err := s.seqWindow(ctx, f, w); err != nil || !ok {
		return err
	}
	decode := q.Decode || w.decode
	order, cmp := "ASC", ">"
	cursor := int64(q.After)
	if q.Desc {
		order, cmp = "DESC", "<"
		cursor = math.MaxInt64
		if q.Before > 0 {
			cursor = int64(min(q.Before, math.MaxInt64))
		}
	} else if q.Before > 0 {
		w.add("seq < ?", int64(min(q.Before, math.MaxInt64)))
	}
	if q.Desc && q.After > 0 {
		w.add("seq > ?", int64(q.After))
	}
	page := 64
	for {
		args := append(append([]any(nil), w.args...), cursor, page)
		sql := fmt.Sprintf("SELECT seq, raw FROM chio_receipts WHERE %s AND seq %s $%d ORDER BY seq %s LIMIT $%d",
			w.sql(), cmp, len(w.args)+1, order, len(w.args)+2)
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return fmt.Errorf("pgstore: query receipts: %w", err)
		}
		type hit struct {
			seq int64
			raw []byte
		}
		var hits []hit
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.seq, &h.raw); err != nil {
				rows.Close()
				return err
			}
			hits = append(hits, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, h := range hits {
			var r *receipt.Receipt
			if decode {
				var err error
				if r, err = receipt.Decode(h.raw); err != nil {
					return fmt.Errorf("pgstore: stored receipt seq %d: %w", h.seq, err)
				}
				if !f.Match(r) {
					continue
				}
			}
			if !fn(uint64(h.seq), h.raw, r) {
				return nil
			}
		}
		if len(hits) < page {
			return nil
		}
		cursor = hits[len(hits)-1].seq
		page = min(page*4, ScanChunk)
	}
}
