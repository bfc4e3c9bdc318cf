package boltstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/commitq"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

var (
	bucketCalls      = []byte("calls")       // request_id → CallRecord JSON
	bucketRevoked    = []byte("revoked")     // capability id → unix ms
	bucketCounters   = []byte("counters")    // key → uint64
	bucketReceipts   = []byte("receipts")    // seq (8 bytes BE) → signed receipt bytes
	bucketReceiptIDs = []byte("receipt_ids") // receipt id → seq
	bucketLeaves     = []byte("leaves")      // seq → RFC 6962 leaf hash
	bucketApprovals  = []byte("approvals")   // approval id → approval.Request JSON
	bucketPending    = []byte("pending")     // approval id → {} while pending (ids are time-ordered)
	bucketConsumed   = []byte("consumed")    // token id → approval id: the replay authority
	bucketBatches    = []byte("batches")     // batch id → approval.Batch JSON
	bucketInFlight   = []byte("dispatching") // request id → {} while status is dispatching
	allBuckets       = append([][]byte{bucketCalls, bucketRevoked, bucketCounters, bucketReceipts, bucketReceiptIDs,
		bucketLeaves, bucketApprovals, bucketPending, bucketConsumed, bucketBatches, bucketInFlight,
		bucketCheckpoints}, indexBuckets...)
)

// Options configures Open. The zero value is valid.
type Options struct {
	// OnCommit, if set, is called by the committer after each durable commit
	// with the receipts it carried, in seq order (the Merkle log feeds here).
	OnCommit func([]*kernel.Appended)
	// Observe, if set, receives each durable commit's size and where its
	// time went.
	Observe func(CommitStats)
	// NoSync disables fsync: ONLY for benchmarks that measure the rest.
	NoSync bool
	// Log, if set, is loaded with every stored leaf hash at Open (before
	// any commit) and fed each commit's leaves after it is durable, so its
	// Merkle tree always equals the durable log. Start it with Log.Start.
	Log *receipt.Log
	// OnHeal, if set, is called after a failed store has reopened and
	// committed a probe: calls left in flight by the failure can now be
	// finished (kernel.RecoverInFlight).
	OnHeal func()
	// HealInterval is how often a failed store tries to reopen; 0 means
	// DefaultHealInterval.
	HealInterval time.Duration
	// AbsorbWindow is how long a commit's transaction keeps taking in calls
	// queued while it is being built; 0 means DefaultAbsorbWindow.
	AbsorbWindow time.Duration
}

// Store is a bbolt-backed kernel.Store.
type Store struct {
	// dbMu guards db: readers and the committer hold it shared; healing
	// (closing and reopening the file after a failed commit) holds it alone.
	dbMu    sync.RWMutex
	db      *bolt.DB
	path    string
	key     keys.PrivateKey
	opts    Options
	queue   *commitq.Queue[*op]
	done    chan struct{} // closed when the committer has drained and stopped
	failed  atomic.Pointer[error]
	lastSeq atomic.Uint64

	// The audit index trails the receipts by at most IndexLag (index.go,
	// "Batched indexing"). indexed is the seq it covers through; unindexed
	// are the committed receipts after it, in seq order. Only the committer
	// touches unindexed (and reopen, which holds dbMu alone).
	indexed   atomic.Uint64
	unindexed []indexEntry
}

var _ kernel.Store = (*Store)(nil)

type op struct {
	ctx  context.Context
	fn   func(kernel.Tx) error
	done chan error
}

// Open opens (creating if needed) the store at path. key signs receipts.
func Open(path string, key keys.PrivateKey, opts Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("boltstore: %w", err)
	}
	db, err := openDB(path, opts)
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if opts.HealInterval <= 0 {
		opts.HealInterval = DefaultHealInterval
	}
	if opts.AbsorbWindow <= 0 {
		opts.AbsorbWindow = DefaultAbsorbWindow
	}
	s := &Store{db: db, path: path, key: key, opts: opts, queue: commitq.New[*op](QueueCapacity),
		done: make(chan struct{})}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if k, _ := tx.Bucket(bucketReceipts).Cursor().Last(); k != nil {
			s.lastSeq.Store(binary.BigEndian.Uint64(k))
		}
		return nil
	})
	if err == nil {
		// A store written before the indexes existed, or closed with its
		// last receipts not yet indexed.
		err = catchUp(db)
		s.indexed.Store(s.lastSeq.Load())
	}
	if err == nil && opts.Log != nil {
		var leaves [][32]byte
		if leaves, err = loadLeaves(db, s.lastSeq.Load()); err == nil {
			opts.Log.Load(leaves)
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("boltstore: init: %w", err)
	}
	go s.commitLoop()
	return s, nil
}

func openDB(path string, opts Options) (*bolt.DB, error) {
	return bolt.Open(path, 0o600, &bolt.Options{
		Timeout: 2 * time.Second, // another chiod holds the lock: say so, don't hang
		// A large initial mmap means long audit reads never block the writer
		// on a remap.
		InitialMmapSize: 1 << 30,
		FreelistType:    bolt.FreelistMapType,
		NoFreelistSync:  true,
		NoSync:          opts.NoSync,
	})
}

// view runs fn in a read-only bbolt transaction.
func (s *Store) view(fn func(*bolt.Tx) error) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	return s.db.View(fn)
}

// QueueDepth reports how many Update calls wait for the committer.
func (s *Store) QueueDepth() int64 { return s.queue.Depth() }

// Update enqueues fn and waits until the commit carrying it is durable.
func (s *Store) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if e := s.failed.Load(); e != nil {
		return fmt.Errorf("%w: %v", kernel.ErrUnavailable, *e)
	}
	o := &op{ctx: ctx, fn: fn, done: make(chan error, 1)}
	if err := s.queue.Put(o); err != nil {
		return err
	}
	// Wait for the commit even if ctx ends: the work is queued and will be
	// committed; the caller learns the outcome (a retry sees the state).
	return <-o.done
}

// View runs fn in a read-only transaction.
func (s *Store) View(fn func(kernel.ReadTx) error) error {
	return s.view(func(btx *bolt.Tx) error { return fn(&tx{btx: btx, s: s, last: s.lastSeq.Load()}) })
}

// Close stops accepting work, drains and commits everything queued, then
// closes the file.
func (s *Store) Close() error {
	if !s.queue.Close() {
		<-s.done
		return nil
	}
	<-s.done
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	// Leave the index whole: the next Open then starts at once (a crash
	// leaves it to catchUp instead).
	if err := s.indexUnindexed(); err != nil {
		slog.Warn("closing with the last receipts unindexed; the next open indexes them", "err", err)
	}
	return s.db.Close()
}

// CommitStats describe one durable group commit.
type CommitStats struct {
	Calls int           // Update calls it carried
	Total time.Duration // from taking the first call to durable, fsyncs included
	// Where the committer's time went. The rest of Total is the gaps
	// between (mostly waiting for a CPU) and any attempt rebuilt without
	// a function that failed.
	Run      time.Duration // the calls' functions, reads and writes included
	Sign     time.Duration // signing the receipts (the committer and its helpers)
	Receipts time.Duration // storing the receipts, leaf hashes and (when due) index entries
	Write    time.Duration // bbolt's commit: page writes and both fsyncs
}

func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]*op, 0, MaxBatch)
	for {
		var ok bool
		// After Close, Next drains what was accepted before: it is committed.
		if batch, ok = s.queue.Next(batch, MaxBatch); !ok {
			return
		}
		s.commit(batch)
	}
}

// commit runs batch in one transaction, together with whatever is queued
// while that transaction is being built (for at most Options.AbsorbWindow): callers
// released by the previous commit then join this one instead of waiting a
// whole commit for the next. Receipts are signed in rounds as their
// functions finish, by the committer and GOMAXPROCS-1 helpers. A function
// that fails, or whose receipt cannot be signed, is answered with its error
// and the transaction is rebuilt without it, because bbolt has no savepoints
// and its partial writes must not reach the disk.
func (s *Store) commit(batch []*op) {
	start := time.Now()
	if e := s.failed.Load(); e != nil {
		for _, o := range batch {
			o.done <- fmt.Errorf("%w: %v", kernel.ErrUnavailable, *e)
		}
		return
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	live := batch
	for {
		var st CommitStats // a rebuilt transaction starts over
		btx, err := s.db.Begin(true)
		if err != nil {
			s.fail(live, err)
			return
		}
		t := &tx{btx: btx, s: s, last: s.lastSeq.Load(), writable: true}
		var owner []int // index in live of the function that appended each receipt
		ran, failedAt := 0, -1
		var ferr error
		for {
			t0 := time.Now()
			for ; ran < len(live); ran++ {
				mark := len(t.appended)
				if ferr = runOp(live[ran], t); ferr != nil {
					t.appended = t.appended[:mark]
					failedAt = ran
					break
				}
				for range t.appended[mark:] {
					owner = append(owner, ran)
				}
			}
			t1 := time.Now()
			st.Run += t1.Sub(t0)
			if failedAt >= 0 {
				break
			}
			// A receipt that cannot be signed fails its own function, not
			// the batch (and never poisons the store).
			i, err := s.signReceipts(t)
			st.Sign += time.Since(t1)
			if err != nil {
				failedAt, ferr = owner[i], err
				break
			}
			if len(live) >= MaxBatch || time.Since(start) >= s.opts.AbsorbWindow {
				break
			}
			if live = s.queue.Absorb(live, MaxBatch); ran == len(live) {
				break
			}
		}
		if failedAt >= 0 {
			btx.Rollback()
			live[failedAt].done <- ferr
			live = append(live[:failedAt:failedAt], live[failedAt+1:]...)
			if len(live) == 0 {
				return
			}
			continue
		}
		t2 := time.Now()
		if err := s.writeReceipts(t); err != nil {
			btx.Rollback()
			s.fail(live, err)
			return
		}
		t3 := time.Now()
		if err := btx.Commit(); err != nil {
			s.fail(live, err)
			return
		}
		st.Receipts, st.Write = t3.Sub(t2), time.Since(t3)
		s.lastSeq.Store(t.last)
		s.committedIndex(t)
		if s.opts.Log != nil && len(t.leaves) > 0 {
			s.opts.Log.Append(t.appended[0].Receipt.Seq, t.leaves)
		}
		if s.opts.OnCommit != nil && len(t.appended) > 0 {
			s.opts.OnCommit(t.appended)
		}
		if s.opts.Observe != nil {
			st.Calls, st.Total = len(live), time.Since(start)
			s.opts.Observe(st)
		}
		for _, o := range live {
			o.done <- nil
		}
		return
	}
}

// runOp isolates a panicking function: it fails alone, closed.
func runOp(o *op, t *tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("boltstore: update function panicked: %v", r)
		}
	}()
	if err := o.ctx.Err(); err != nil {
		return err
	}
	return o.fn(t)
}

// signReceipts signs the transaction's receipts appended since the last
// call (their seqs are fixed, so the bytes do not depend on scheduling).
// The committer signs too, taking receipts one at a time from a shared
// index, with up to GOMAXPROCS-1 helpers: under load a helper may queue
// behind busy callers for a CPU, while the committer already holds one. On
// failure it returns the index of a receipt that could not be signed.
func (s *Store) signReceipts(t *tx) (int, error) {
	from, n := t.signed, len(t.appended)
	if from == n {
		return 0, nil
	}
	errs := make([]error, n-from)
	var next atomic.Int64
	next.Store(int64(from))
	sign := func() {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			a := t.appended[i]
			a.Raw, errs[i-from] = receipt.Sign(s.key, a.Receipt)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), (n-from+3)/4) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sign()
		}()
	}
	sign()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return from + i, err
		}
	}
	t.signed = n
	return 0, nil
}

// writeReceipts stores the transaction's signed receipts and their leaf
// hashes, and indexes them when the index is due (index.go).
func (s *Store) writeReceipts(t *tx) error {
	n := len(t.appended)
	if n == 0 {
		return s.indexTail(t)
	}
	rb, ib, lb := t.btx.Bucket(bucketReceipts), t.btx.Bucket(bucketReceiptIDs), t.btx.Bucket(bucketLeaves)
	rb.FillPercent, lb.FillPercent = appendFill, appendFill // seq keys only grow
	t.leaves = make([][32]byte, 0, n)
	for _, a := range t.appended {
		k := seqKey(a.Receipt.Seq)
		leaf := receiptLeaf(a.Raw)
		t.leaves = append(t.leaves, leaf)
		if err := rb.Put(k, a.Raw); err != nil {
			return err
		}
		if err := ib.Put([]byte(a.Receipt.ID), k); err != nil {
			return err
		}
		if err := lb.Put(k, leaf[:]); err != nil {
			return err
		}
	}
	return s.indexTail(t)
}

// receiptLeaf is RFC 6962's leaf hash over the stored bytes.
func receiptLeaf(raw []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(raw)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func (s *Store) fail(batch []*op, err error) {
	e := fmt.Errorf("commit failed: %w", err)
	if s.failed.CompareAndSwap(nil, &e) {
		go s.heal()
	}
	for _, o := range batch {
		o.done <- fmt.Errorf("%w: %v", kernel.ErrUnavailable, e)
	}
}

func seqKey(seq uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	return b[:]
}

// tx implements kernel.Tx over a bbolt transaction.
type tx struct {
	btx      *bolt.Tx
	s        *Store
	last     uint64
	writable bool
	appended []*kernel.Appended
	signed   int        // appended[:signed] are signed
	leaves   [][32]byte // of appended, once signed
	indexAll bool       // a reader asked for the whole log indexed (syncIndex)
	indexes  bool       // this commit brings the index up to t.last
}

func (t *tx) Call(id string) (*kernel.CallRecord, error) {
	v := t.btx.Bucket(bucketCalls).Get([]byte(id))
	if v == nil {
		return nil, kernel.ErrNotFound
	}
	// Every settle reads the record its decision wrote, on the committer's
	// critical path: decoded with go-json-experiment's implementation of
	// encoding/json's semantics, 2.7x faster (codec_test.go holds the two
	// to the same result).
	var c kernel.CallRecord
	if err := jsonv1.Unmarshal(v, &c); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt call %q: %w", id, err)
	}
	return &c, nil
}

func (t *tx) PutCall(c *kernel.CallRecord) error {
	v, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if c.Status == kernel.StatusDispatching {
		if err := t.btx.Bucket(bucketInFlight).Put([]byte(c.RequestID), []byte{}); err != nil {
			return err
		}
	} else if err := t.btx.Bucket(bucketInFlight).Delete([]byte(c.RequestID)); err != nil {
		return err
	}
	return t.btx.Bucket(bucketCalls).Put([]byte(c.RequestID), v)
}

func (t *tx) Revoked(id string) (bool, error) {
	return t.btx.Bucket(bucketRevoked).Get([]byte(id)) != nil, nil
}

func (t *tx) Revoke(id string, at int64) error {
	b := t.btx.Bucket(bucketRevoked)
	if b.Get([]byte(id)) != nil {
		return nil // first revocation time wins
	}
	return b.Put([]byte(id), seqKey(uint64(at)))
}

func (t *tx) Counter(key string) (uint64, error) {
	v := t.btx.Bucket(bucketCounters).Get([]byte(key))
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, errors.New("boltstore: corrupt counter")
	}
	return binary.BigEndian.Uint64(v), nil
}

func (t *tx) SetCounter(key string, v uint64) error {
	return t.btx.Bucket(bucketCounters).Put([]byte(key), seqKey(v))
}

func (t *tx) Receipt(id string) ([]byte, error) {
	k := t.btx.Bucket(bucketReceiptIDs).Get([]byte(id))
	if k == nil {
		return nil, kernel.ErrNotFound
	}
	v := t.btx.Bucket(bucketReceipts).Get(k)
	if v == nil {
		return nil, fmt.Errorf("boltstore: receipt %s indexed but missing", id)
	}
	return v, nil
}

func (t *tx) Receipts(from, to uint64, fn func(uint64, []byte) bool) error {
	c := t.btx.Bucket(bucketReceipts).Cursor()
	for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
		seq := binary.BigEndian.Uint64(k)
		if seq > to || !fn(seq, v) {
			break
		}
	}
	return nil
}

func (t *tx) LastSeq() uint64 { return t.last }

func (t *tx) AppendReceipt(r *receipt.Receipt) *kernel.Appended {
	if !t.writable {
		panic("boltstore: AppendReceipt on read-only tx")
	}
	t.last++
	r.Seq = t.last
	a := &kernel.Appended{Receipt: r}
	t.appended = append(t.appended, a)
	return a
}

func (t *tx) Approval(id string) (*approval.Request, error) {
	v := t.btx.Bucket(bucketApprovals).Get([]byte(id))
	if v == nil {
		return nil, kernel.ErrNotFound
	}
	var r approval.Request
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt approval %q: %w", id, err)
	}
	return &r, nil
}

func (t *tx) PutApproval(r *approval.Request) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if r.Status == approval.StatusPending {
		err = t.btx.Bucket(bucketPending).Put([]byte(r.ApprovalID), []byte{})
	} else {
		err = t.btx.Bucket(bucketPending).Delete([]byte(r.ApprovalID))
	}
	if err != nil {
		return err
	}
	return t.btx.Bucket(bucketApprovals).Put([]byte(r.ApprovalID), v)
}

func (t *tx) PendingApprovals(fn func(*approval.Request) bool) error {
	c := t.btx.Bucket(bucketPending).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		r, err := t.Approval(string(k))
		if err != nil {
			return err
		}
		if !fn(r) {
			return nil
		}
	}
	return nil
}

func (t *tx) Consumed(tokenID string) (bool, error) {
	return t.btx.Bucket(bucketConsumed).Get([]byte(tokenID)) != nil, nil
}

func (t *tx) Consume(tokenID, approvalID string) error {
	b := t.btx.Bucket(bucketConsumed)
	if b.Get([]byte(tokenID)) != nil {
		return approval.ErrReplay
	}
	return b.Put([]byte(tokenID), []byte(approvalID))
}

func (t *tx) Batch(id string) (*approval.Batch, error) {
	v := t.btx.Bucket(bucketBatches).Get([]byte(id))
	if v == nil {
		return nil, kernel.ErrNotFound
	}
	var b approval.Batch
	if err := json.Unmarshal(v, &b); err != nil {
		return nil, fmt.Errorf("boltstore: corrupt batch %q: %w", id, err)
	}
	return &b, nil
}

func (t *tx) Batches(fn func(*approval.Batch) bool) error {
	c := t.btx.Bucket(bucketBatches).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		b, err := t.Batch(string(k))
		if err != nil {
			return err
		}
		if !fn(b) {
			return nil
		}
	}
	return nil
}

func (t *tx) PutBatch(b *approval.Batch) error {
	v, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return t.btx.Bucket(bucketBatches).Put([]byte(b.Token.ID), v)
}

func (t *tx) Dispatching(fn func(*kernel.CallRecord) bool) error {
	c := t.btx.Bucket(bucketInFlight).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		rec, err := t.Call(string(k))
		if err != nil {
			return err
		}
		if !fn(rec) {
			return nil
		}
	}
	return nil
}
