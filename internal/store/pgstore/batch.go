package pgstore

import (
	"context"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A batch's functions run concurrently, each in its own goroutine with its
// own write layer; their reads are collected and sent to PostgreSQL as one
// pipeline per round, so a batch of a hundred functions that each read one
// row costs one round trip, not a hundred. Then, in queue order, each
// function is kept unless it read something an earlier kept function
// wrote (it saw the state before that write); those are run again, one
// after another, against everything kept — the same result as running the
// whole batch in order, which is what boltstore does.

// batchTx is one transaction's shared state. The transaction is driven by
// hand on one connection (not pgx.Tx), so that BEGIN rides with the first
// statements and COMMIT with the last: a batch costs three round trips
// whatever its size — reads, writes, receipts and commit.
type batchTx struct {
	ctx       context.Context
	s         *Store
	conn      *pgxpool.Conn
	begun     bool // BEGIN was sent
	committed bool // COMMIT succeeded
	// commitSent: a round trip holding COMMIT was sent. A failure before
	// that certainly committed nothing (kernel.ErrNotCommitted); one after
	// it may have committed.
	commitSent bool
	schema     int    // the database's schema version, read with BEGIN (schema_fence.go)
	base       *layer // the functions kept so far

	mu         sync.Mutex // the caches and the failure, written by the pipeline
	dbCalls    map[string]dbRow
	dbApproval map[string]dbRow
	dbBatches  map[string]dbRow
	dbCounters map[string]counterRow
	dbErr      error // a statement failed: the transaction is aborted
	culprit    int   // the function whose statement failed, or -1
}

type dbRow struct {
	found bool
	raw   []byte
}

type counterRow struct {
	found bool
	value uint64
}

func newBatchTx(ctx context.Context, s *Store, conn *pgxpool.Conn) *batchTx {
	return &batchTx{ctx: ctx, s: s, conn: conn, base: newLayer(), culprit: -1, dbCalls: map[string]dbRow{},
		dbApproval: map[string]dbRow{}, dbBatches: map[string]dbRow{}, dbCounters: map[string]counterRow{}}
}

// query is one read a function needs: a statement whose rows scan
// consumes, or a lookup of one row by key (see lookups), which a pipeline
// answers for every function at once with one statement per kind.
type query struct {
	fn   int // the function asking
	sql  string
	args []any
	scan func(pgx.Rows) error

	kind  lookupKind // a lookup when set
	key   string
	found bool
	raw   []byte
	num   int64

	err  error
	done chan struct{}
}

// lookupKind is a keyed row read; lookups of one kind in one pipeline are
// one statement (= ANY), locking their rows in key order.
type lookupKind int

const (
	lookCall lookupKind = iota + 1
	lookApproval
	lookBatch
	lookCounter
	lookConsumed
	lookRevoked
)

// lookups are the statements behind each kind: key, then the value (none
// for an existence check). Inside a batch transaction the rows are locked
// (FOR UPDATE, in key order); in a View they are not.
var lookups = map[lookupKind]struct {
	sql   string
	lock  bool // the row is read to be changed: lock it
	bytes bool // the key is bytea
	value string
}{
	lookCall:     {"SELECT request_id, rec FROM chio_calls WHERE request_id = ANY($1::text[]) ORDER BY request_id", true, false, "raw"},
	lookApproval: {"SELECT approval_id, req FROM chio_approvals WHERE approval_id = ANY($1::text[]) ORDER BY approval_id", true, false, "raw"},
	lookBatch:    {"SELECT id, batch FROM chio_batches WHERE id = ANY($1::text[]) ORDER BY id", true, false, "raw"},
	lookCounter:  {"SELECT key, value FROM chio_counters WHERE key = ANY($1::bytea[]) ORDER BY key", true, true, "num"},
	lookConsumed: {"SELECT token_id FROM chio_consumed WHERE token_id = ANY($1::text[])", false, false, ""},
	lookRevoked:  {"SELECT capability_id FROM chio_revoked WHERE capability_id = ANY($1::text[])", false, false, ""},
}

// queueLookups adds one statement per kind for the lookups among qs,
// locking the rows when lock is set.
func queueLookups(batch *pgx.Batch, qs []*query, lock bool) {
	byKind := map[lookupKind][]*query{}
	for _, q := range qs {
		if q.kind != 0 {
			byKind[q.kind] = append(byKind[q.kind], q)
		}
	}
	for kind, group := range byKind {
		l := lookups[kind]
		waiting := map[string][]*query{}
		var keys []string
		for _, q := range group {
			if _, dup := waiting[q.key]; !dup {
				keys = append(keys, q.key)
			}
			waiting[q.key] = append(waiting[q.key], q)
		}
		var arg any = keys
		if l.bytes {
			bk := make([][]byte, len(keys))
			for i, k := range keys {
				bk[i] = []byte(k)
			}
			arg = bk
		}
		sql := l.sql
		if lock && l.lock {
			sql += " FOR UPDATE"
		}
		batch.Queue(sql, arg).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var key []byte
				var raw []byte
				var num int64
				var err error
				switch l.value {
				case "raw":
					err = rows.Scan(&key, &raw)
				case "num":
					err = rows.Scan(&key, &num)
				default:
					err = rows.Scan(&key)
				}
				if err != nil {
					return err
				}
				for _, q := range waiting[string(key)] {
					q.found, q.raw, q.num = true, raw, num
				}
			}
			return rows.Err()
		})
	}
}

// failed records the first statement failure and who caused it.
func (b *batchTx) failed(fn int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dbErr == nil {
		b.dbErr, b.culprit = err, fn
	}
}

func (b *batchTx) aborted() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dbErr
}

// send runs a pipeline, opening the transaction with it the first time:
// BEGIN, then the schema fence's lock and version read (schema_fence.go).
func (b *batchTx) send(batch *pgx.Batch) error {
	if !b.begun {
		b.begun = true
		open := append([]*pgx.QueuedQuery{{SQL: "BEGIN ISOLATION LEVEL READ COMMITTED"}}, schemaGuard(&b.schema)...)
		batch.QueuedQueries = append(open, batch.QueuedQueries...)
	}
	return b.conn.SendBatch(b.ctx, batch).Close()
}

// pipeline runs queries as one round trip, answering each.
func (b *batchTx) pipeline(qs []*query) {
	defer func() {
		for _, q := range qs {
			if q.done != nil {
				close(q.done)
			}
		}
	}()
	if err := b.aborted(); err != nil {
		for _, q := range qs {
			q.err = err
		}
		return
	}
	sort.SliceStable(qs, func(i, j int) bool { return qs[i].fn < qs[j].fn })
	batch := &pgx.Batch{}
	queueLookups(batch, qs, true)
	answered := make([]bool, len(qs))
	for i, q := range qs {
		if q.kind != 0 {
			answered[i] = true
			continue
		}
		batch.Queue(q.sql, q.args...).Query(func(rows pgx.Rows) error {
			answered[i] = true
			err := q.scan(rows)
			if err == nil {
				err = rows.Err()
			}
			q.err = err
			return err
		})
	}
	err := b.send(batch)
	if err == nil {
		return
	}
	culprit := qs[0].fn
	for i, q := range qs {
		if q.err != nil {
			culprit = q.fn
			break
		}
		if !answered[i] {
			culprit = q.fn
			break
		}
	}
	b.failed(culprit, err)
	for _, q := range qs {
		if q.err == nil {
			q.err = err
		}
	}
}

// event is what a running function reports: a read it waits for, or nil
// when it has returned.
type event = *query

// runConcurrent runs every function of the batch at once, answering their
// reads a pipeline per round, and returns each one's transaction view and
// error.
func (b *batchTx) runConcurrent(live []*op) ([]*fnTx, []error) {
	n := len(live)
	events := make(chan event, n)
	views := make([]*fnTx, n)
	errs := make([]error, n)
	for i, o := range live {
		views[i] = newFnTx(b, i, events)
		go func(i int, o *op) {
			errs[i] = runOp(o, views[i])
			events <- nil
		}(i, o)
	}
	for active := n; active > 0; {
		var pending []*query
		for reported := 0; reported < active; reported++ {
			if q := <-events; q != nil {
				pending = append(pending, q)
			}
		}
		active = len(pending)
		if active > 0 {
			b.pipeline(pending)
		}
	}
	return views, errs
}
