package receipt

import (
	"context"
	"io"
)

// Query is a filtered read of the log in seq order. Paging is by seq: After
// and Before are exclusive bounds (0 = unbounded), so a page's last seq is
// the next page's cursor.
type Query struct {
	Filter Filter
	After  uint64
	Before uint64
	// Desc visits newest first.
	Desc bool
	// Decode asks for every match decoded (stats need the fields); without
	// it the store decodes only when the filter needs more than its indexes.
	Decode bool
}

// Index answers queries from a store's secondary indexes, so that a
// selective filter does not scan the whole log. fn sees each match in seq
// order (reversed with Desc) and returns false to stop; raw is valid only
// during fn, and r is the decoded receipt when the store decoded it (always
// with q.Decode), else nil.
type Index interface {
	QueryReceipts(q Query, fn func(seq uint64, raw []byte, r *Receipt) bool) error
}

// StatsIndex computes receipt stats from a store's indexes, decoding only
// the receipts it must (those carrying a latency or a metadata group key),
// so that stats over the whole log stay fast.
type StatsIndex interface {
	ReceiptStats(f Filter, groupBy string) (StatsResult, error)
}

// Exporter writes the self-contained audit export (see WriteExport's format)
// from one consistent snapshot of the store.
type Exporter interface {
	Export(ctx context.Context, w io.Writer) error
}
