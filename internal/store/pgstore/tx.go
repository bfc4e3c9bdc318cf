package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// writeTx implements kernel.Tx inside one batch transaction.
//
// Reads lock what they return (SELECT … FOR UPDATE), so a check a function
// makes still holds when the batch commits; a second replica's function
// reading the same row waits, then sees this commit. Writes go to the
// running function's layer; a function that succeeds merges its layer into
// the batch's, one that fails is dropped without a trace — PostgreSQL
// never saw its writes. flush writes the batch's layer at the end.
type writeTx struct {
	ctx   context.Context
	s     *Store
	tx    pgx.Tx
	dbErr error  // a statement failed: the transaction is aborted
	base  *layer // the functions kept so far
	op    *layer // the function running now

	// Rows this transaction read (and so locked); found=false: absent. An
	// absent row another transaction inserts meanwhile makes this one's
	// insert fail on the unique key, and the batch runs again.
	dbCalls    map[string]dbRow
	dbApproval map[string]dbRow
	dbCounters map[string]counterRow
	dbBatches  map[string]dbRow
}

type dbRow struct {
	found bool
	raw   []byte
}

type counterRow struct {
	found bool
	value uint64
}

// layer is one function's (or the batch's) buffered writes.
type layer struct {
	calls     map[string]callRow
	approvals map[string]approvalRow
	counters  map[string]uint64
	revoked   map[string]int64
	consumed  map[string]string
	batches   map[string][]byte
	receipts  []*kernel.Appended
}

type callRow struct {
	status string
	raw    []byte
}

type approvalRow struct {
	status  string
	expires int64
	raw     []byte
}

func newLayer() *layer {
	return &layer{calls: map[string]callRow{}, approvals: map[string]approvalRow{}, counters: map[string]uint64{},
		revoked: map[string]int64{}, consumed: map[string]string{}, batches: map[string][]byte{}}
}

func newWriteTx(ctx context.Context, s *Store, tx pgx.Tx) *writeTx {
	return &writeTx{ctx: ctx, s: s, tx: tx, base: newLayer(), dbCalls: map[string]dbRow{},
		dbApproval: map[string]dbRow{}, dbCounters: map[string]counterRow{}, dbBatches: map[string]dbRow{}}
}

func (w *writeTx) begin() { w.op = newLayer() }
func (w *writeTx) drop()  { w.op = nil }

func (w *writeTx) keep() {
	o, b := w.op, w.base
	for k, v := range o.calls {
		b.calls[k] = v
	}
	for k, v := range o.approvals {
		b.approvals[k] = v
	}
	for k, v := range o.counters {
		b.counters[k] = v
	}
	for k, v := range o.revoked {
		if _, ok := b.revoked[k]; !ok {
			b.revoked[k] = v
		}
	}
	for k, v := range o.consumed {
		b.consumed[k] = v
	}
	for k, v := range o.batches {
		b.batches[k] = v
	}
	b.receipts = append(b.receipts, o.receipts...)
	w.op = nil
}

func (w *writeTx) empty() bool {
	b := w.base
	return len(b.calls)+len(b.approvals)+len(b.counters)+len(b.revoked)+len(b.consumed)+len(b.batches)+len(b.receipts) == 0
}

// layers are searched newest first.
func (w *writeTx) layers() []*layer {
	if w.op != nil {
		return []*layer{w.op, w.base}
	}
	return []*layer{w.base}
}

// fail records a statement error: the transaction is aborted, and the
// batch is retried without the function that caused it (commit.go).
func (w *writeTx) fail(err error) error {
	if w.dbErr == nil {
		w.dbErr = err
	}
	return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err)
}

// errBadKey: a key no row can have (PostgreSQL text holds no NUL).
var errBadKey = errors.New("pgstore: key must be valid UTF-8 without NUL")

func textKey(s string) bool {
	return s != "" && utf8.ValidString(s) && !slices.Contains([]byte(s), 0)
}

// row reads one locked row into cache.
func (w *writeTx) row(cache map[string]dbRow, sql, key string) (dbRow, error) {
	if r, ok := cache[key]; ok {
		return r, nil
	}
	var raw []byte
	err := w.tx.QueryRow(w.ctx, sql, key).Scan(&raw)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		cache[key] = dbRow{}
		return dbRow{}, nil
	case err != nil:
		return dbRow{}, w.fail(err)
	}
	r := dbRow{found: true, raw: raw}
	cache[key] = r
	return r, nil
}

func (w *writeTx) Call(id string) (*kernel.CallRecord, error) {
	for _, l := range w.layers() {
		if c, ok := l.calls[id]; ok {
			return decodeCall(id, c.raw)
		}
	}
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	r, err := w.row(w.dbCalls, "SELECT rec FROM chio_calls WHERE request_id = $1 FOR UPDATE", id)
	if err != nil {
		return nil, err
	}
	if !r.found {
		return nil, kernel.ErrNotFound
	}
	return decodeCall(id, r.raw)
}

func (w *writeTx) PutCall(c *kernel.CallRecord) error {
	if !textKey(c.RequestID) {
		return fmt.Errorf("%w: request id %q", errBadKey, c.RequestID)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return err
	}
	w.op.calls[c.RequestID] = callRow{status: c.Status, raw: raw}
	return nil
}

func (w *writeTx) Revoked(id string) (bool, error) {
	for _, l := range w.layers() {
		if _, ok := l.revoked[id]; ok {
			return true, nil
		}
	}
	if !textKey(id) {
		return false, nil
	}
	return w.exists("SELECT EXISTS (SELECT 1 FROM chio_revoked WHERE capability_id = $1)", id)
}

func (w *writeTx) exists(sql string, arg any) (bool, error) {
	var ok bool
	if err := w.tx.QueryRow(w.ctx, sql, arg).Scan(&ok); err != nil {
		return false, w.fail(err)
	}
	return ok, nil
}

func (w *writeTx) Revoke(id string, at int64) error {
	if !textKey(id) {
		return fmt.Errorf("%w: capability id %q", errBadKey, id)
	}
	if ok, err := w.Revoked(id); err != nil || ok {
		return err // the first revocation time wins
	}
	w.op.revoked[id] = at
	return nil
}

func (w *writeTx) Counter(key string) (uint64, error) {
	for _, l := range w.layers() {
		if v, ok := l.counters[key]; ok {
			return v, nil
		}
	}
	if r, ok := w.dbCounters[key]; ok {
		return r.value, nil
	}
	var v int64
	err := w.tx.QueryRow(w.ctx, "SELECT value FROM chio_counters WHERE key = $1 FOR UPDATE", []byte(key)).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		w.dbCounters[key] = counterRow{}
		return 0, nil
	case err != nil:
		return 0, w.fail(err)
	}
	w.dbCounters[key] = counterRow{found: true, value: uint64(v)}
	return uint64(v), nil
}

func (w *writeTx) SetCounter(key string, v uint64) error {
	if v > 1<<62 {
		return fmt.Errorf("pgstore: counter %d out of range", v)
	}
	w.op.counters[key] = v
	return nil
}

func (w *writeTx) Receipt(id string) ([]byte, error) {
	return readReceipt(w.ctx, w.tx, id, w.fail)
}

func (w *writeTx) Receipts(from, to uint64, fn func(uint64, []byte) bool) error {
	if err := scanReceipts(w.ctx, w.tx, from, to, fn); err != nil {
		return w.fail(err)
	}
	return nil
}

// LastSeq is the last committed seq; this batch's receipts are numbered
// after it only when the batch commits.
func (w *writeTx) LastSeq() uint64 {
	n, err := lastSeq(w.ctx, w.tx)
	if err != nil {
		w.fail(err)
	}
	return n
}

func (w *writeTx) AppendReceipt(r *receipt.Receipt) *kernel.Appended {
	a := &kernel.Appended{Receipt: r}
	w.op.receipts = append(w.op.receipts, a)
	return a
}

func (w *writeTx) Approval(id string) (*approval.Request, error) {
	for _, l := range w.layers() {
		if a, ok := l.approvals[id]; ok {
			return decodeApproval(id, a.raw)
		}
	}
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	r, err := w.row(w.dbApproval, "SELECT req FROM chio_approvals WHERE approval_id = $1 FOR UPDATE", id)
	if err != nil {
		return nil, err
	}
	if !r.found {
		return nil, kernel.ErrNotFound
	}
	return decodeApproval(id, r.raw)
}

func (w *writeTx) PutApproval(r *approval.Request) error {
	if !textKey(r.ApprovalID) {
		return fmt.Errorf("%w: approval id %q", errBadKey, r.ApprovalID)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	w.op.approvals[r.ApprovalID] = approvalRow{status: r.Status, expires: r.ExpiresAt, raw: raw}
	return nil
}

func (w *writeTx) PendingApprovals(fn func(*approval.Request) bool) error {
	ids := map[string]bool{}
	err := scanPendingIDs(w.ctx, w.tx, func(id string) { ids[id] = true })
	if err != nil {
		return w.fail(err)
	}
	for _, l := range w.layers() {
		for id := range l.approvals {
			ids[id] = true
		}
	}
	order := make([]string, 0, len(ids))
	for id := range ids {
		order = append(order, id)
	}
	slices.Sort(order) // ids are UUIDv7: oldest first
	for _, id := range order {
		r, err := w.Approval(id)
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

func (w *writeTx) Consumed(tokenID string) (bool, error) {
	for _, l := range w.layers() {
		if _, ok := l.consumed[tokenID]; ok {
			return true, nil
		}
	}
	if !textKey(tokenID) {
		return false, nil
	}
	return w.exists("SELECT EXISTS (SELECT 1 FROM chio_consumed WHERE token_id = $1)", tokenID)
}

// Consume buffers the token's row; the primary key decides at commit: of
// two transactions consuming one token, the second fails on the key, runs
// again, and its function then gets approval.ErrReplay here.
func (w *writeTx) Consume(tokenID, approvalID string) error {
	if !textKey(tokenID) || !textKey(approvalID) {
		return fmt.Errorf("%w: token id %q", errBadKey, tokenID)
	}
	used, err := w.Consumed(tokenID)
	if err != nil {
		return err
	}
	if used {
		return approval.ErrReplay
	}
	w.op.consumed[tokenID] = approvalID
	return nil
}

func (w *writeTx) Batch(id string) (*approval.Batch, error) {
	for _, l := range w.layers() {
		if b, ok := l.batches[id]; ok {
			return decodeBatch(id, b)
		}
	}
	if !textKey(id) {
		return nil, kernel.ErrNotFound
	}
	r, err := w.row(w.dbBatches, "SELECT batch FROM chio_batches WHERE id = $1 FOR UPDATE", id)
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
func (w *writeTx) Batches(fn func(*approval.Batch) bool) error {
	rows, err := w.tx.Query(w.ctx, "SELECT id, batch FROM chio_batches ORDER BY id FOR UPDATE")
	if err != nil {
		return w.fail(err)
	}
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			rows.Close()
			return w.fail(err)
		}
		w.dbBatches[id] = dbRow{found: true, raw: raw}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return w.fail(err)
	}
	ids := map[string]bool{}
	for id, r := range w.dbBatches {
		if r.found {
			ids[id] = true
		}
	}
	for _, l := range w.layers() {
		for id := range l.batches {
			ids[id] = true
		}
	}
	order := make([]string, 0, len(ids))
	for id := range ids {
		order = append(order, id)
	}
	slices.Sort(order)
	for _, id := range order {
		b, err := w.Batch(id)
		if err != nil {
			return err
		}
		if !fn(b) {
			return nil
		}
	}
	return nil
}

func (w *writeTx) PutBatch(b *approval.Batch) error {
	if !textKey(b.Token.ID) {
		return fmt.Errorf("%w: batch id %q", errBadKey, b.Token.ID)
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	w.op.batches[b.Token.ID] = raw
	return nil
}

func (w *writeTx) Dispatching(fn func(*kernel.CallRecord) bool) error {
	ids := map[string]bool{}
	if err := scanDispatchingIDs(w.ctx, w.tx, func(id string) { ids[id] = true }); err != nil {
		return w.fail(err)
	}
	for _, l := range w.layers() {
		for id := range l.calls {
			ids[id] = true
		}
	}
	order := make([]string, 0, len(ids))
	for id := range ids {
		order = append(order, id)
	}
	slices.Sort(order)
	for _, id := range order {
		c, err := w.Call(id)
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

func decodeCall(id string, raw []byte) (*kernel.CallRecord, error) {
	var c kernel.CallRecord
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("pgstore: corrupt call %q: %w", id, err)
	}
	return &c, nil
}

func decodeApproval(id string, raw []byte) (*approval.Request, error) {
	var r approval.Request
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("pgstore: corrupt approval %q: %w", id, err)
	}
	return &r, nil
}

func decodeBatch(id string, raw []byte) (*approval.Batch, error) {
	var b approval.Batch
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("pgstore: corrupt batch %q: %w", id, err)
	}
	return &b, nil
}
