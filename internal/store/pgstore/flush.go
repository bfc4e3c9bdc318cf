package pgstore

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// flush writes the batch's layer and commits: every row in one pipelined
// round trip, ending with COMMIT — or, when the batch has receipts, with
// the log head's advance (which locks it); then, under that lock, the
// receipts are numbered, signed, and inserted with the COMMIT in a second
// round trip. The lock is held for one signing and one round trip.
func (w *batchTx) flush() ([]*kernel.Appended, error) {
	b := w.base
	batch := &pgx.Batch{}
	w.queueCalls(batch)
	w.queueApprovals(batch)
	w.queueCounters(batch)
	if len(b.revoked) > 0 {
		var ids []string
		var at []int64
		for id, t := range b.revoked {
			ids, at = append(ids, id), append(at, t)
		}
		batch.Queue(`INSERT INTO chio_revoked (capability_id, at_ms) SELECT * FROM unnest($1::text[], $2::bigint[])
			ON CONFLICT (capability_id) DO NOTHING`, ids, at)
	}
	if len(b.consumed) > 0 {
		var tokens, approvals []string
		for t, a := range b.consumed {
			tokens, approvals = append(tokens, t), append(approvals, a)
		}
		// No ON CONFLICT: a token consumed by a concurrent commit fails
		// this transaction on the key, and the batch runs again.
		batch.Queue(`INSERT INTO chio_consumed (token_id, approval_id) SELECT * FROM unnest($1::text[], $2::text[])`, tokens, approvals)
	}
	if err := w.queueBatches(batch); err != nil {
		return nil, err
	}
	n := len(b.receipts)
	var last int64
	var revokedSince []string
	held := func(int64) error { return nil }
	if n > 0 {
		// Last, so the lock on the head is held for as short as possible.
		// The notification reaches the other replicas when this commits.
		batch.Queue(`WITH h AS (UPDATE chio_log_head SET last_seq = last_seq + $1 WHERE id = 1 RETURNING last_seq),
			n AS (SELECT pg_notify($2, 'log:' || last_seq) FROM h)
			SELECT last_seq FROM h, n`, n, notifyChannel).QueryRow(func(row pgx.Row) error { return row.Scan(&last) })
		// Under that lock: the database still holds this replica's tree,
		// or these receipts would fork it (logfeed.go).
		held = w.s.queueTipCheck(batch)
		// Revocations and decisions meet on the head's lock (revocations
		// take it too, below): read again now, in a statement of its own
		// (a fresh snapshot), the capabilities this batch's decisions read
		// as not revoked. One revoked meanwhile, on any replica, fails the
		// transaction and the batch runs again, now seeing it.
		var ids []string
		for id := range b.unrevoked {
			// A capability this transaction revokes itself was read before
			// the revocation in its serial order: no other replica's doing.
			if _, own := b.revoked[id]; !own {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			batch.Queue("SELECT capability_id FROM chio_revoked WHERE capability_id = ANY($1::text[])", ids).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var id string
					if err := rows.Scan(&id); err != nil {
						return err
					}
					revokedSince = append(revokedSince, id)
				}
				return rows.Err()
			})
		}
	} else {
		if len(b.revoked) > 0 {
			// A revocation holds the head's lock until it commits, so a
			// decision's re-read under that lock (above) sees it.
			batch.Queue("SELECT 1 FROM chio_log_head WHERE id = 1 FOR UPDATE")
		}
		batch.Queue("COMMIT")
		w.commitSent = true
	}
	if err := w.send(batch); err != nil {
		return nil, err
	}
	if err := held(last - int64(n)); err != nil {
		return nil, err
	}
	if len(revokedSince) > 0 {
		return nil, fmt.Errorf("%w: %v", errRevokedSinceRead, revokedSince)
	}
	if n == 0 {
		w.committed = true
		return nil, nil
	}
	first := uint64(last) - uint64(n) + 1
	for i, a := range b.receipts {
		a.Receipt.Seq = first + uint64(i)
	}
	if err := w.writeReceipts(b.receipts); err != nil {
		return nil, err
	}
	return b.receipts, nil
}

// queueCalls writes call records: a record this transaction found absent is
// inserted (a concurrent insert of the same request id then fails this
// transaction on the key: never overwrite a decision); the others upserted.
// A dispatching call is owned by this replica: it is the one delivering it.
func (w *batchTx) queueCalls(batch *pgx.Batch) {
	type cols struct {
		ids, status []string
		owner       []*string
		raws        [][]byte
	}
	var ins, ups cols
	for id, c := range w.base.calls {
		dst := &ups
		if r, read := w.dbCalls[id]; read && !r.found {
			dst = &ins
		}
		var owner *string
		if c.status == kernel.StatusDispatching {
			owner = &w.s.id
		}
		dst.ids, dst.status, dst.owner, dst.raws = append(dst.ids, id), append(dst.status, c.status), append(dst.owner, owner), append(dst.raws, c.raw)
	}
	const sel = `INSERT INTO chio_calls (request_id, status, owner, rec) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[])`
	if len(ins.ids) > 0 {
		batch.Queue(sel, ins.ids, ins.status, ins.owner, ins.raws)
	}
	if len(ups.ids) > 0 {
		batch.Queue(sel+` ON CONFLICT (request_id) DO UPDATE SET status = excluded.status, owner = excluded.owner, rec = excluded.rec`,
			ups.ids, ups.status, ups.owner, ups.raws)
	}
}

// queueApprovals writes approval requests the same way: insert what was
// absent, upsert the rest. Any write releases a deadline's claim: the
// request changed, and whoever fires it next re-reads it.
func (w *batchTx) queueApprovals(batch *pgx.Batch) {
	type cols struct {
		ids, status []string
		expires     []int64
		raws        [][]byte
	}
	var ins, ups cols
	for id, a := range w.base.approvals {
		dst := &ups
		if r, read := w.dbApproval[id]; read && !r.found {
			dst = &ins
		}
		dst.ids, dst.status, dst.expires, dst.raws = append(dst.ids, id), append(dst.status, a.status), append(dst.expires, a.expires), append(dst.raws, a.raw)
	}
	const sel = `INSERT INTO chio_approvals (approval_id, status, expires_at, req)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bytea[])`
	if len(ins.ids) > 0 {
		batch.Queue(sel, ins.ids, ins.status, ins.expires, ins.raws)
	}
	if len(ups.ids) > 0 {
		batch.Queue(sel+` ON CONFLICT (approval_id) DO UPDATE SET status = excluded.status, expires_at = excluded.expires_at,
			req = excluded.req, claimed_by = NULL, claim_until = 0`, ups.ids, ups.status, ups.expires, ups.raws)
	}
}

// queueBatches writes standing approvals the same way. A batch its writer
// read as absent is inserted: two replicas creating one batch at once then
// meet on the key (23505), and the loser runs again and finds the winner's
// batch (with any slot used or revocation since), never overwriting it.
// Each row carries its not_after and whether it is retired, the columns
// LiveBatches selects by (migration 0002).
func (w *batchTx) queueBatches(batch *pgx.Batch) error {
	type rows struct {
		ids      []string
		raws     [][]byte
		notAfter []int64
		retired  []bool
	}
	var ins, ups rows
	for id, raw := range w.base.batches {
		b, err := decodeBatch(id, raw)
		if err != nil {
			return err
		}
		to := &ups
		if r, read := w.dbBatches[id]; read && !r.found {
			to = &ins
		}
		to.ids, to.raws = append(to.ids, id), append(to.raws, raw)
		to.notAfter, to.retired = append(to.notAfter, b.Token.NotAfter), append(to.retired, b.Retired())
	}
	const sel = `INSERT INTO chio_batches (id, batch, not_after, retired)
		SELECT * FROM unnest($1::text[], $2::bytea[], $3::bigint[], $4::boolean[])`
	if len(ins.ids) > 0 {
		batch.Queue(sel, ins.ids, ins.raws, ins.notAfter, ins.retired)
	}
	if len(ups.ids) > 0 {
		batch.Queue(sel+` ON CONFLICT (id) DO UPDATE SET batch = excluded.batch, not_after = excluded.not_after,
			retired = excluded.retired`, ups.ids, ups.raws, ups.notAfter, ups.retired)
	}
	return nil
}

// queueCounters writes counters the same way: insert what was absent,
// upsert the rest.
func (w *batchTx) queueCounters(batch *pgx.Batch) {
	var insK, upsK [][]byte
	var insV, upsV []int64
	for k, v := range w.base.counters {
		if r, read := w.dbCounters[k]; read && !r.found {
			insK, insV = append(insK, []byte(k)), append(insV, int64(v))
		} else {
			upsK, upsV = append(upsK, []byte(k)), append(upsV, int64(v))
		}
	}
	const sel = `INSERT INTO chio_counters (key, value) SELECT * FROM unnest($1::bytea[], $2::bigint[])`
	if len(insK) > 0 {
		batch.Queue(sel, insK, insV)
	}
	if len(upsK) > 0 {
		batch.Queue(sel+` ON CONFLICT (key) DO UPDATE SET value = excluded.value`, upsK, upsV)
	}
}

// writeReceipts signs the numbered receipts across all cores (their seqs
// are fixed, so the bytes do not depend on scheduling), inserts them and
// commits.
func (w *batchTx) writeReceipts(rs []*kernel.Appended) error {
	n := len(rs)
	errs := make([]error, n)
	workers := min(runtime.GOMAXPROCS(0), (n+3)/4)
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for i := k; i < n; i += workers {
				rs[i].Raw, errs[i] = receipt.Sign(w.s.key, rs[i].Receipt)
			}
		}(k)
	}
	wg.Wait()
	var c receiptCols
	for i, a := range rs {
		if errs[i] != nil {
			return fmt.Errorf("pgstore: sign receipt %s: %w", a.Receipt.ID, errs[i])
		}
		c.add(a)
	}
	batch := &pgx.Batch{}
	batch.Queue(insertReceipts, c.seq, c.id, c.ts, c.verdict, c.guard, c.server, c.tool, c.subject, c.request,
		c.metaKeys, c.metaLo, c.metaHi, c.latency, c.raw, c.leaf)
	batch.Queue("COMMIT")
	w.commitSent = true
	if err := w.send(batch); err != nil {
		return err
	}
	w.committed = true
	return nil
}

// insertReceipts inserts a batch of receipts from column arrays; each
// row's metadata keys are its slice (lo, hi] of one flat array.
const insertReceipts = `INSERT INTO chio_receipts
	(seq, id, ts, verdict, guard, server, tool, subject, request_id, meta_keys, latency_ms, raw, leaf)
	SELECT u.seq, u.id, u.ts, u.verdict, u.guard, u.server, u.tool, u.subject, u.request_id,
		coalesce(($10::bytea[])[u.lo + 1 : u.hi], '{}'::bytea[]), u.latency, u.raw, u.leaf
	FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bytea[], $5::bytea[], $6::bytea[], $7::bytea[], $8::bytea[],
		$9::bytea[], $11::int[], $12::int[], $13::float8[], $14::bytea[], $15::bytea[])
		AS u(seq, id, ts, verdict, guard, server, tool, subject, request_id, lo, hi, latency, raw, leaf)`

// receiptCols are receipts' rows as columns: the signed bytes, their leaf
// hash, and the fields audit queries filter on.
type receiptCols struct {
	seq, ts                                             []int64
	id                                                  []string
	verdict, guard, server, tool, subject, request, raw [][]byte
	leaf, metaKeys                                      [][]byte
	metaLo, metaHi                                      []int32
	latency                                             []*float64
}

func (c *receiptCols) add(a *kernel.Appended) {
	r := a.Receipt
	keys := make([]string, 0, len(r.Metadata))
	for k := range r.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c.metaLo = append(c.metaLo, int32(len(c.metaKeys)))
	for _, k := range keys {
		c.metaKeys = append(c.metaKeys, []byte(k))
	}
	c.metaHi = append(c.metaHi, int32(len(c.metaKeys)))
	var latency *float64
	if v, ok := metaNumber(r.Metadata[receipt.LatencyKey]); ok {
		latency = &v
	}
	leaf := receipt.LeafHash(a.Raw)
	c.seq, c.ts, c.id = append(c.seq, int64(r.Seq)), append(c.ts, r.Timestamp), append(c.id, r.ID)
	c.verdict, c.guard = append(c.verdict, []byte(r.Decision.Verdict)), append(c.guard, []byte(r.Decision.Guard))
	c.server, c.tool = append(c.server, []byte(r.ToolServer)), append(c.tool, []byte(r.ToolName))
	c.subject, c.request = append(c.subject, []byte(r.Subject)), append(c.request, []byte(r.RequestID))
	c.latency, c.raw, c.leaf = append(c.latency, latency), append(c.raw, a.Raw), append(c.leaf, leaf[:])
}

// metaNumber reads a metadata number the way receipt stats do after
// decoding the stored JSON: any JSON number counts, nothing else does.
func metaNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, n == n // not NaN
	case float32:
		return float64(n), n == n
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
