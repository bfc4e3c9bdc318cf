package pgstore

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/jsonexact"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// fnTx implements kernel.Tx for one function of a batch.
//
// Reads lock what they return (SELECT … FOR UPDATE), so a check a function
// makes still holds when the batch commits; a second replica's function
// reading the same row waits, then sees this commit. Writes go to the
// function's own layer: a function that fails is dropped without a trace
// (PostgreSQL never saw its writes), one that is kept merges its layer into
// the batch's, and flush writes that at the end.
type fnTx struct {
	b      *batchTx
	idx    int
	layer  *layer
	reads  map[string]bool // conflict keys this function read (see batch.go)
	events chan<- event    // nil: running alone, reads go straight to the database
}

// Conflict keys: a kind letter and the row's key; a kind letter alone is a
// scan over every row of that kind.
const (
	kCall     = "c"
	kApproval = "a"
	kCounter  = "n"
	kRevoked  = "r"
	kConsumed = "t"
	kBatch    = "b"
)

func newFnTx(b *batchTx, idx int, events chan<- event) *fnTx {
	return &fnTx{b: b, idx: idx, layer: newLayer(), reads: map[string]bool{}, events: events}
}

// run gets a statement answered: in the batch's next pipeline while
// functions run concurrently, or now when this one runs alone.
func (f *fnTx) run(sql string, args []any, scan func(pgx.Rows) error) error {
	return f.ask(&query{fn: f.idx, sql: sql, args: args, scan: scan})
}

// lookup reads one row by key (batch.go: lookups).
func (f *fnTx) lookup(kind lookupKind, key string) (*query, error) {
	q := &query{fn: f.idx, kind: kind, key: key}
	return q, f.ask(q)
}

func (f *fnTx) ask(q *query) error {
	if f.events == nil {
		f.b.pipeline([]*query{q})
	} else {
		q.done = make(chan struct{})
		f.events <- q
		<-q.done
	}
	if q.err != nil {
		return fmt.Errorf("%w: %v", kernel.ErrUnavailable, q.err)
	}
	return nil
}

// errBadKey: a key no row can have (PostgreSQL text holds no NUL).
var errBadKey = errors.New("pgstore: key must be valid UTF-8 without NUL")

func textKey(s string) bool {
	return s != "" && utf8.ValidString(s) && !slices.Contains([]byte(s), 0)
}

// row reads one locked row of a cached kind.
func (f *fnTx) row(cache map[string]dbRow, kind lookupKind, key string) (dbRow, error) {
	f.b.mu.Lock()
	r, ok := cache[key]
	f.b.mu.Unlock()
	if ok {
		return r, nil
	}
	q, err := f.lookup(kind, key)
	if err != nil {
		return dbRow{}, err
	}
	r = dbRow{found: q.found, raw: q.raw}
	f.b.mu.Lock()
	if prev, ok := cache[key]; ok {
		r = prev // another function read it in the same pipeline
	} else {
		cache[key] = r
	}
	f.b.mu.Unlock()
	return r, nil
}

func (f *fnTx) exists(kind lookupKind, key string) (bool, error) {
	q, err := f.lookup(kind, key)
	return q.found, err
}

func (f *fnTx) Call(id string) (*kernel.CallRecord, error) {
	if c, ok := f.layer.calls[id]; ok {
		return decodeCall(id, c.raw)
	}
	f.reads[kCall+id] = true
	if c, ok := f.b.base.calls[id]; ok {
		return decodeCall(id, c.raw)
	}
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	r, err := f.row(f.b.dbCalls, lookCall, id)
	if err != nil {
		return nil, err
	}
	if !r.found {
		return nil, kernel.ErrNotFound
	}
	return decodeCall(id, r.raw)
}

func (f *fnTx) PutCall(c *kernel.CallRecord) error {
	if !textKey(c.RequestID) {
		return fmt.Errorf("%w: request id %q", errBadKey, c.RequestID)
	}
	raw, err := jsonexact.Marshal(c)
	if err != nil {
		return err
	}
	put(&f.layer.calls, c.RequestID, callRow{status: c.Status, raw: raw})
	return nil
}

func (f *fnTx) Revoked(id string) (bool, error) {
	if _, ok := f.layer.revoked[id]; ok {
		return true, nil
	}
	f.reads[kRevoked+id] = true
	if _, ok := f.b.base.revoked[id]; ok {
		return true, nil
	}
	if !textKey(id) {
		return false, nil
	}
	revoked, err := f.exists(lookRevoked, id)
	if err == nil && !revoked {
		put(&f.layer.unrevoked, id, true) // read again under the head's lock (flush)
	}
	return revoked, err
}

func (f *fnTx) Revoke(id string, at int64) error {
	if !textKey(id) {
		return fmt.Errorf("%w: capability id %q", errBadKey, id)
	}
	if ok, err := f.Revoked(id); err != nil || ok {
		return err // the first revocation time wins
	}
	put(&f.layer.revoked, id, at)
	delete(f.layer.unrevoked, id) // revoked by this very transaction: nothing to re-read
	return nil
}

func (f *fnTx) Counter(key string) (uint64, error) {
	if v, ok := f.layer.counters[key]; ok {
		return v, nil
	}
	f.reads[kCounter+key] = true
	if v, ok := f.b.base.counters[key]; ok {
		return v, nil
	}
	f.b.mu.Lock()
	r, ok := f.b.dbCounters[key]
	f.b.mu.Unlock()
	if ok {
		return r.value, nil
	}
	q, err := f.lookup(lookCounter, key)
	if err != nil {
		return 0, err
	}
	r = counterRow{found: q.found, value: uint64(q.num)}
	f.b.mu.Lock()
	if prev, ok := f.b.dbCounters[key]; ok {
		r = prev
	} else {
		f.b.dbCounters[key] = r
	}
	f.b.mu.Unlock()
	return r.value, nil
}

func (f *fnTx) SetCounter(key string, v uint64) error {
	if v > 1<<62 {
		return fmt.Errorf("pgstore: counter %d out of range", v)
	}
	put(&f.layer.counters, key, v)
	return nil
}

func (f *fnTx) Receipt(id string) ([]byte, error) {
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	raw, ok, err := f.bytesRow("SELECT raw FROM chio_receipts WHERE id = $1", id)
	if err == nil && !ok {
		err = kernel.ErrNotFound
	}
	return raw, err
}

func (f *fnTx) bytesRow(sql string, arg any) ([]byte, bool, error) {
	var raw []byte
	found := false
	err := f.run(sql, []any{arg}, func(rows pgx.Rows) error {
		if rows.Next() {
			found = true
			return rows.Scan(&raw)
		}
		return nil
	})
	return raw, found, err
}

func (f *fnTx) Receipts(from, to uint64, fn func(uint64, []byte) bool) error {
	return scanReceipts(f.run, from, to, fn)
}

// LastSeq is the last committed seq; this batch's receipts are numbered
// after it only when the batch commits.
func (f *fnTx) LastSeq() uint64 {
	var n int64
	_ = f.run("SELECT last_seq FROM chio_log_head WHERE id = 1", nil, func(rows pgx.Rows) error {
		if rows.Next() {
			return rows.Scan(&n)
		}
		return nil
	})
	return uint64(n) // a failure aborts the batch (batch.go)
}

func (f *fnTx) AppendReceipt(r *receipt.Receipt) *kernel.Appended {
	a := &kernel.Appended{Receipt: r}
	f.layer.receipts = append(f.layer.receipts, a)
	return a
}

func (f *fnTx) Approval(id string) (*approval.Request, error) {
	if a, ok := f.layer.approvals[id]; ok {
		return decodeApproval(id, a.raw)
	}
	f.reads[kApproval+id] = true
	if a, ok := f.b.base.approvals[id]; ok {
		return decodeApproval(id, a.raw)
	}
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	r, err := f.row(f.b.dbApproval, lookApproval, id)
	if err != nil {
		return nil, err
	}
	if !r.found {
		return nil, kernel.ErrNotFound
	}
	return decodeApproval(id, r.raw)
}

func (f *fnTx) PutApproval(r *approval.Request) error {
	if !textKey(r.ApprovalID) {
		return fmt.Errorf("%w: approval id %q", errBadKey, r.ApprovalID)
	}
	raw, err := jsonexact.Marshal(r)
	if err != nil {
		return err
	}
	put(&f.layer.approvals, r.ApprovalID, approvalRow{status: r.Status, expires: r.ExpiresAt, raw: raw})
	return nil
}

// ids reads a column of ids.
func (f *fnTx) ids(sql string) (map[string]bool, error) {
	out := map[string]bool{}
	err := f.run(sql, nil, func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out[id] = true
		}
		return nil
	})
	return out, err
}

// merged returns, sorted, the ids of db plus every id this function or the
// batch wrote of that kind.
func merged(db map[string]bool, layers ...[]string) []string {
	for _, l := range layers {
		for _, id := range l {
			db[id] = true
		}
	}
	out := make([]string, 0, len(db))
	for id := range db {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (f *fnTx) PendingApprovals(fn func(*approval.Request) bool) error {
	f.reads[kApproval] = true
	db, err := f.ids("SELECT approval_id FROM chio_approvals WHERE status = 'pending'")
	if err != nil {
		return err
	}
	for _, id := range merged(db, keysOf(f.layer.approvals), keysOf(f.b.base.approvals)) { // UUIDv7: oldest first
		r, err := f.Approval(id)
		if errors.Is(err, kernel.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if r.Status == approval.StatusPending && !fn(r) {
			return nil
		}
	}
	return nil
}

func (f *fnTx) Consumed(tokenID string) (bool, error) {
	if _, ok := f.layer.consumed[tokenID]; ok {
		return true, nil
	}
	f.reads[kConsumed+tokenID] = true
	if _, ok := f.b.base.consumed[tokenID]; ok {
		return true, nil
	}
	if !textKey(tokenID) {
		return false, nil
	}
	return f.exists(lookConsumed, tokenID)
}

// Consume buffers the token's row; the primary key decides at commit: of
// two transactions consuming one token, the second fails on the key, runs
// again, and its function then gets approval.ErrReplay here.
func (f *fnTx) Consume(tokenID, approvalID string) error {
	if !textKey(tokenID) || !textKey(approvalID) {
		return fmt.Errorf("%w: token id %q", errBadKey, tokenID)
	}
	used, err := f.Consumed(tokenID)
	if err != nil {
		return err
	}
	if used {
		return approval.ErrReplay
	}
	put(&f.layer.consumed, tokenID, approvalID)
	return nil
}

func (f *fnTx) Batch(id string) (*approval.Batch, error) {
	if b, ok := f.layer.batches[id]; ok {
		return decodeBatch(id, b)
	}
	f.reads[kBatch+id] = true
	if b, ok := f.b.base.batches[id]; ok {
		return decodeBatch(id, b)
	}
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	r, err := f.row(f.b.dbBatches, lookBatch, id)
	if err != nil {
		return nil, err
	}
	if !r.found {
		return nil, kernel.ErrNotFound
	}
	return decodeBatch(id, r.raw)
}

// Batches locks every standing approval (in id order, so two replicas
// claiming slots never deadlock on them): its counters change only under
// the lock, and two calls can never both take the last slot.
func (f *fnTx) Batches(after string, fn func(*approval.Batch) bool) error {
	return f.lockedBatches("SELECT id, batch FROM chio_batches WHERE id > $1 ORDER BY id FOR UPDATE", []any{after},
		func(id string, _ *approval.Batch) bool { return id > after }, fn)
}

// LiveBatches is Batches for the batches live at now: it locks and reads
// only the rows not retired whose not_after is after now (the partial
// index chio_batches_live), then judges this transaction's own writes
// the same way. A row retired by another replica while this one waited
// for its lock is left out (READ COMMITTED re-checks the WHERE on the
// row it locked).
func (f *fnTx) LiveBatches(now int64, fn func(*approval.Batch) bool) error {
	return f.lockedBatches("SELECT id, batch FROM chio_batches WHERE NOT retired AND not_after > $1 ORDER BY id FOR UPDATE", []any{now},
		func(_ string, b *approval.Batch) bool { return b.Live(now) }, fn) // retired or ended by a write of this transaction
}

// lockedBatches locks and reads the rows query selects (in id order), then
// visits, in id order, those rows and this transaction's own batches that
// keep accepts, as the transaction sees them.
func (f *fnTx) lockedBatches(query string, args []any, keep func(string, *approval.Batch) bool, fn func(*approval.Batch) bool) error {
	f.reads[kBatch] = true
	db := map[string]bool{}
	err := f.run(query, args, func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var raw []byte
			if err := rows.Scan(&id, &raw); err != nil {
				return err
			}
			db[id] = true
			f.b.mu.Lock()
			if _, ok := f.b.dbBatches[id]; !ok {
				f.b.dbBatches[id] = dbRow{found: true, raw: raw}
			}
			f.b.mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range merged(db, keysOf(f.layer.batches), keysOf(f.b.base.batches)) {
		b, err := f.Batch(id)
		if errors.Is(err, kernel.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if !keep(id, b) {
			continue
		}
		if !fn(b) {
			return nil
		}
	}
	return nil
}

func (f *fnTx) PutBatch(b *approval.Batch) error {
	if !textKey(b.Token.ID) {
		return fmt.Errorf("%w: batch id %q", errBadKey, b.Token.ID)
	}
	raw, err := jsonexact.Marshal(b)
	if err != nil {
		return err
	}
	put(&f.layer.batches, b.Token.ID, raw)
	return nil
}

func (f *fnTx) Dispatching(fn func(*kernel.CallRecord) bool) error {
	f.reads[kCall] = true
	db, err := f.ids("SELECT request_id FROM chio_calls WHERE status = 'dispatching'")
	if err != nil {
		return err
	}
	for _, id := range merged(db, keysOf(f.layer.calls), keysOf(f.b.base.calls)) {
		c, err := f.Call(id)
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
