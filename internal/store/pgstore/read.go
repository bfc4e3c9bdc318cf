package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// readTx implements kernel.ReadTx over one pooled connection. Each read is
// its own statement and sees what was committed when it ran.
type readTx struct {
	s   *Store
	ctx context.Context
	q   querier
	err error // a failure of a read that cannot return one (LastSeq)
}

func (r *readTx) wrap(err error) error { return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err) }

// one reads a single bytea column of one row; found=false when absent.
func (r *readTx) one(sql string, arg any) ([]byte, bool, error) {
	var raw []byte
	err := r.q.QueryRow(r.ctx, sql, arg).Scan(&raw)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, r.wrap(err)
	}
	return raw, true, nil
}

func (r *readTx) Call(id string) (*kernel.CallRecord, error) {
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	raw, ok, err := r.one("SELECT rec FROM chio_calls WHERE request_id = $1", id)
	if err != nil || !ok {
		return nil, notFound(err)
	}
	return decodeCall(id, raw)
}

func notFound(err error) error {
	if err != nil {
		return err
	}
	return kernel.ErrNotFound
}

func (r *readTx) exists(sql string, arg any) (bool, error) {
	var ok bool
	if err := r.q.QueryRow(r.ctx, sql, arg).Scan(&ok); err != nil {
		return false, r.wrap(err)
	}
	return ok, nil
}

func (r *readTx) Revoked(id string) (bool, error) {
	if !textKey(id) {
		return false, nil
	}
	return r.exists("SELECT EXISTS (SELECT 1 FROM chio_revoked WHERE capability_id = $1)", id)
}

func (r *readTx) Counter(key string) (uint64, error) {
	var v int64
	err := r.q.QueryRow(r.ctx, "SELECT value FROM chio_counters WHERE key = $1", []byte(key)).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, r.wrap(err)
	}
	return uint64(v), nil
}

func (r *readTx) Receipt(id string) ([]byte, error) { return readReceipt(r.ctx, r.q, id, r.wrap) }

func (r *readTx) Receipts(from, to uint64, fn func(uint64, []byte) bool) error {
	if err := scanReceipts(r.ctx, r.q, from, to, fn); err != nil {
		return r.wrap(err)
	}
	return nil
}

func (r *readTx) LastSeq() uint64 {
	n, err := lastSeq(r.ctx, r.q)
	if err != nil && r.err == nil {
		r.err = r.wrap(err)
	}
	return n
}

func (r *readTx) Approval(id string) (*approval.Request, error) {
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	raw, ok, err := r.one("SELECT req FROM chio_approvals WHERE approval_id = $1", id)
	if err != nil || !ok {
		return nil, notFound(err)
	}
	return decodeApproval(id, raw)
}

// PendingApprovals pages through pending requests by id (UUIDv7: oldest
// first).
func (r *readTx) PendingApprovals(fn func(*approval.Request) bool) error {
	after := ""
	for {
		rows, err := r.q.Query(r.ctx, `SELECT approval_id, req FROM chio_approvals
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
	return r.exists("SELECT EXISTS (SELECT 1 FROM chio_consumed WHERE token_id = $1)", tokenID)
}

func (r *readTx) Batch(id string) (*approval.Batch, error) {
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	raw, ok, err := r.one("SELECT batch FROM chio_batches WHERE id = $1", id)
	if err != nil || !ok {
		return nil, notFound(err)
	}
	return decodeBatch(id, raw)
}

func (r *readTx) Batches(fn func(*approval.Batch) bool) error {
	rows, err := r.q.Query(r.ctx, "SELECT id, batch FROM chio_batches ORDER BY id")
	if err != nil {
		return r.wrap(err)
	}
	var all []*approval.Batch
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			rows.Close()
			return r.wrap(err)
		}
		b, err := decodeBatch(id, raw)
		if err != nil {
			rows.Close()
			return err
		}
		all = append(all, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r.wrap(err)
	}
	for _, b := range all {
		if !fn(b) {
			return nil
		}
	}
	return nil
}

func (r *readTx) Dispatching(fn func(*kernel.CallRecord) bool) error {
	var ids []string
	if err := scanDispatchingIDs(r.ctx, r.q, func(id string) { ids = append(ids, id) }); err != nil {
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

// scanReceipts visits receipts with seq in [from, to], ascending, a chunk
// per query so that stopping early costs at most one chunk.
func scanReceipts(ctx context.Context, q querier, from, to uint64, fn func(uint64, []byte) bool) error {
	from = max(from, 1)
	for from <= to {
		rows, err := q.Query(ctx, "SELECT seq, raw FROM chio_receipts WHERE seq >= $1 AND seq <= $2 ORDER BY seq LIMIT $3",
			int64(from), int64(min(to, 1<<62)), ScanChunk)
		if err != nil {
			return err
		}
		type hit struct {
			seq uint64
			raw []byte
		}
		var page []hit
		for rows.Next() {
			var seq int64
			var raw []byte
			if err := rows.Scan(&seq, &raw); err != nil {
				rows.Close()
				return err
			}
			page = append(page, hit{uint64(seq), raw})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
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
