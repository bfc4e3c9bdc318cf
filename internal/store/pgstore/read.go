package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// readTx implements kernel.ReadTx. Keyed lookups are batched with other
// Views' (reader.go); scans run on a connection taken when first needed.
// Each read sees what was committed when it ran. With snap set (an
// export's snapshot transaction) every read runs on it.
type readTx struct {
	s    *Store
	ctx  context.Context
	snap pgx.Tx
	conn *pgxpool.Conn // taken for scans when first needed, released at the end
	err  error         // a failure of a read that cannot return one (LastSeq)
}

func (r *readTx) wrap(err error) error { return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err) }

// querier returns where scans run.
func (r *readTx) querier() (querier, error) {
	if r.snap != nil {
		return r.snap, nil
	}
	if r.conn == nil {
		c, err := r.s.pool.Acquire(r.ctx)
		if err != nil {
			return nil, r.wrap(err)
		}
		r.conn = c
	}
	return r.conn, nil
}

func (r *readTx) release() {
	if r.conn != nil {
		r.conn.Release()
	}
}

// lookup reads one row by key: batched, or on q in a snapshot.
func (r *readTx) lookup(kind lookupKind, key string) (*query, error) {
	if r.snap == nil {
		return r.s.lookup(r.ctx, kind, key)
	}
	q := &query{kind: kind, key: key}
	batch := &pgx.Batch{}
	queueLookups(batch, []*query{q}, false)
	if err := r.snap.SendBatch(r.ctx, batch).Close(); err != nil {
		return nil, r.wrap(err)
	}
	return q, nil
}

func (r *readTx) Call(id string) (*kernel.CallRecord, error) {
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	q, err := r.lookup(lookCall, id)
	if err != nil || !q.found {
		return nil, notFound(err)
	}
	return decodeCall(id, q.raw)
}

func notFound(err error) error {
	if err != nil {
		return err
	}
	return kernel.ErrNotFound
}

func (r *readTx) Revoked(id string) (bool, error) {
	if !textKey(id) {
		return false, nil
	}
	q, err := r.lookup(lookRevoked, id)
	if err != nil {
		return false, err
	}
	return q.found, nil
}

func (r *readTx) Counter(key string) (uint64, error) {
	q, err := r.lookup(lookCounter, key)
	if err != nil {
		return 0, err
	}
	return uint64(q.num), nil
}

func (r *readTx) Receipt(id string) ([]byte, error) {
	q, err := r.querier()
	if err != nil {
		return nil, err
	}
	return readReceipt(r.ctx, q, id, r.wrap)
}

func (r *readTx) Receipts(from, to uint64, fn func(uint64, []byte) bool) error {
	q, err := r.querier()
	if err != nil {
		return err
	}
	if err := scanReceipts(runnerOf(r.ctx, q), from, to, fn); err != nil {
		return r.wrap(err)
	}
	return nil
}

func (r *readTx) LastSeq() uint64 {
	q, err := r.querier()
	if err != nil {
		r.err = err
		return 0
	}
	n, err := lastSeq(r.ctx, q)
	if err != nil && r.err == nil {
		r.err = r.wrap(err)
	}
	return n
}

func (r *readTx) Approval(id string) (*approval.Request, error) {
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	q, err := r.lookup(lookApproval, id)
	if err != nil || !q.found {
		return nil, notFound(err)
	}
	return decodeApproval(id, q.raw)
}

// PendingApprovals pages through pending requests by id (UUIDv7: oldest
// first).
func (r *readTx) PendingApprovals(fn func(*approval.Request) bool) error {
	qr, err := r.querier()
	if err != nil {
		return err
	}
	after := ""
	for {
		rows, err := qr.Query(r.ctx, `SELECT approval_id, req FROM chio_approvals
			WHERE status = 'pending' AND approval_id > $1 ORDER BY approval_id LIMIT $2`, after, ScanChunk)
		if err != nil {
			return r.wrap(err)
		}
		var page []*approval.Request
		for rows.Next() {
			var id string
			var raw []byte
			if err := rows.Scan(&id, &raw); err != nil {
				rows.Close()
				return r.wrap(err)
			}
			req, err := decodeApproval(id, raw)
			if err != nil {
				rows.Close()
				return err
			}
			page = append(page, req)
			after = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return r.wrap(err)
		}
		for _, req := range page {
			if !fn(req) {
				return nil
			}
		}
		if len(page) < ScanChunk {
			return nil
		}
	}
}

func (r *readTx) Consumed(tokenID string) (bool, error) {
	if !textKey(tokenID) {
		return false, nil
	}
	q, err := r.lookup(lookConsumed, tokenID)
	if err != nil {
		return false, err
	}
	return q.found, nil
}

func (r *readTx) Batch(id string) (*approval.Batch, error) {
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	q, err := r.lookup(lookBatch, id)
	if err != nil || !q.found {
		return nil, notFound(err)
	}
	return decodeBatch(id, q.raw)
}

// batchChunk is how many batches readTx.Batches reads per query: a page
// of a long history costs a page, not the whole table.
const batchChunk = 256

func (r *readTx) Batches(after string, fn func(*approval.Batch) bool) error {
	for {
		chunk, err := r.batches("SELECT id, batch FROM chio_batches WHERE id > $1 ORDER BY id LIMIT $2", after, batchChunk)
		if err != nil {
			return err
		}
		for _, b := range chunk {
			if !fn(b) {
				return nil
			}
		}
		if len(chunk) < batchChunk {
			return nil
		}
		after = chunk[len(chunk)-1].Token.ID
	}
}

// LiveBatches reads only the rows LiveBatches in a transaction would.
func (r *readTx) LiveBatches(now int64, fn func(*approval.Batch) bool) error {
	live, err := r.batches("SELECT id, batch FROM chio_batches WHERE NOT retired AND not_after > $1 ORDER BY id", now)
	if err != nil {
		return err
	}
	for _, b := range live {
		if !fn(b) {
			return nil
		}
	}
	return nil
}

// batches runs a query of (id, batch) rows and decodes them all.
func (r *readTx) batches(sql string, args ...any) ([]*approval.Batch, error) {
	qr, err := r.querier()
	if err != nil {
		return nil, err
	}
	rows, err := qr.Query(r.ctx, sql, args...)
	if err != nil {
		return nil, r.wrap(err)
	}
	defer rows.Close()
	var out []*approval.Batch
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, r.wrap(err)
		}
		b, err := decodeBatch(id, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, r.wrap(err)
	}
	return out, nil
}

func (r *readTx) Dispatching(fn func(*kernel.CallRecord) bool) error {
	var ids []string
	qr, err := r.querier()
	if err != nil {
		return err
	}
	if err := scanDispatchingIDs(r.ctx, qr, func(id string) { ids = append(ids, id) }); err != nil {
		return r.wrap(err)
	}
	for _, id := range ids {
		c, err := r.Call(id)
		if errors.Is(err, kernel.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if c.Status == kernel.StatusDispatching && !fn(c) {
			return nil
		}
	}
	return nil
}

// Helpers shared by readTx and writeTx.

func readReceipt(ctx context.Context, q querier, id string, wrap func(error) error) ([]byte, error) {
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	var raw []byte
	err := q.QueryRow(ctx, "SELECT raw FROM chio_receipts WHERE id = $1", id).Scan(&raw)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, kernel.ErrNotFound
	case err != nil:
		return nil, wrap(err)
	}
	return raw, nil
}

// runner runs one query and hands its rows to scan.
type runner func(sql string, args []any, scan func(pgx.Rows) error) error

// runnerOf runs queries on q.
func runnerOf(ctx context.Context, q querier) runner {
	return func(sql string, args []any, scan func(pgx.Rows) error) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		return rows.Err()
	}
}

// scanReceipts visits receipts with seq in [from, to], ascending, a chunk
// per query so that stopping early costs at most one chunk.
func scanReceipts(run runner, from, to uint64, fn func(uint64, []byte) bool) error {
	from = max(from, 1)
	for from <= to {
		type hit struct {
			seq uint64
			raw []byte
		}
		var page []hit
		err := run("SELECT seq, raw FROM chio_receipts WHERE seq >= $1 AND seq <= $2 ORDER BY seq LIMIT $3",
			[]any{int64(from), int64(min(to, 1<<62)), ScanChunk}, func(rows pgx.Rows) error {
				for rows.Next() {
					var seq int64
					var raw []byte
					if err := rows.Scan(&seq, &raw); err != nil {
						return err
					}
					page = append(page, hit{uint64(seq), raw})
				}
				return nil
			})
		if err != nil {
			return err
		}
		for _, h := range page {
			if !fn(h.seq, h.raw) {
				return nil
			}
		}
		if len(page) < ScanChunk {
			return nil
		}
		from = page[len(page)-1].seq + 1
	}
	return nil
}

func lastSeq(ctx context.Context, q querier) (uint64, error) {
	var n int64
	if err := q.QueryRow(ctx, "SELECT last_seq FROM chio_log_head WHERE id = 1").Scan(&n); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

func scanPendingIDs(ctx context.Context, q querier, fn func(string)) error {
	return scanIDs(ctx, q, "SELECT approval_id FROM chio_approvals WHERE status = 'pending'", fn)
}

func scanDispatchingIDs(ctx context.Context, q querier, fn func(string)) error {
	return scanIDs(ctx, q, "SELECT request_id FROM chio_calls WHERE status = 'dispatching'", fn)
}

func scanIDs(ctx context.Context, q querier, sql string, fn func(string)) error {
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		fn(id)
	}
	return rows.Err()
}

// CountersWithPrefix visits the committed counters whose key starts with
// prefix, in key order (kernel.CounterScanner).
func (s *Store) CountersWithPrefix(prefix string, fn func(key string, v uint64) bool) error {
	ctx, cancel := context.WithTimeout(s.bg, ReadTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT key, value FROM chio_counters WHERE substring(key FROM 1 FOR $2) = $1 ORDER BY key",
		[]byte(prefix), len(prefix))
	if err != nil {
		return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key []byte
		var v int64
		if err := rows.Scan(&key, &v); err != nil {
			return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err)
		}
		if !fn(string(key), uint64(v)) {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err)
	}
	return nil
}
