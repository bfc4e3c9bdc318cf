package boltstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

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
	// not_after (8 bytes BE) + batch id → nil while the batch is not retired (batches.go)
	bucketLiveBatches = []byte("batches_live")
	bucketInFlight    = []byte("dispatching") // request id → {} while status is dispatching
	allBuckets        = append([][]byte{bucketCalls, bucketRevoked, bucketCounters, bucketReceipts, bucketReceiptIDs,
		bucketLeaves, bucketApprovals, bucketPending, bucketConsumed, bucketBatches, bucketLiveBatches, bucketInFlight,
		bucketCheckpoints, bucketMeta}, indexBuckets...)
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
	// MmapSize is bbolt's initial memory mapping of the file; 0 means
	// DefaultMmapSize. Tests set it small to make the file outgrow it.
	MmapSize int
}

// DefaultMmapSize maps the first 1 GiB of the file at open, so a store
// smaller than that never remaps (a remap waits for every open read
// transaction; the export keeps its own short, export.go).
const DefaultMmapSize = 1 << 30

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

	// How many recent new call records went to the end of the calls
	// bucket, and how many inside it (pack.go). Only the committer
	// touches them.
	newAtEnd, newInside int

	// durable is the last bbolt transaction known on disk; readers
	// begun on a later one wait for it (durable.go).
	durable *durableMark
	// afterWrite, set only by tests, runs on the committer right after
	// bbolt's Commit returns, before the commit is recorded durable.
	afterWrite func()
}

var _ kernel.Store = (*Store)(nil)

type op struct {
	ctx  context.Context
	fn   func(kernel.Tx) error
	done chan error
}

// Open opens (creating if needed) the store at path. key signs receipts: a
// file belongs to the key that created it, and refuses any other with
// ErrKeyMismatch (kernelkey.go).
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
		unindexedBatches := tx.Bucket(bucketLiveBatches) == nil
		if _, err := tx.CreateBucketIfNotExists(bucketMeta); err != nil {
			return err
		}
		// Before anything else is read or written (format.go).
		if err := checkFormat(tx, path); err != nil {
			return err
		}
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if err := checkKernelKey(tx, path, key.Public()); err != nil {
			return err
		}
		if unindexedBatches { // a store written before the live index
			if err := indexLiveBatches(tx); err != nil {
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
	if err == nil {
		var txid uint64
		txid, err = currentTxID(db)
		s.durable = newDurableMark(txid)
	}
	if err != nil {
		db.Close()
		if errors.Is(err, ErrKeyMismatch) || errors.Is(err, ErrFormatTooNew) {
			return nil, err // says what it is and what to do
		}
		return nil, fmt.Errorf("boltstore: init: %w", err)
	}
	go s.commitLoop()
	return s, nil
}

func openDB(path string, opts Options) (*bolt.DB, error) {
	if err := checkLength(path); err != nil { // truncated.go
		return nil, err
	}
	return bolt.Open(path, 0o600, &bolt.Options{
		Timeout: 2 * time.Second, // another chiod holds the lock: say so, don't hang
		// A large initial mmap means audit reads rarely hold up the writer
		// on a remap; past it, only short read transactions keep it prompt.
		InitialMmapSize: cmp.Or(opts.MmapSize, DefaultMmapSize),
		FreelistType:    bolt.FreelistMapType,
		NoFreelistSync:  true,
		NoSync:          opts.NoSync,
	})
}

// view runs fn in a read-only bbolt transaction, once what it reads is
// durable (durable.go).
func (s *Store) view(fn func(*bolt.Tx) error) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	return s.db.View(func(btx *bolt.Tx) error {
		if err := s.durable.wait(uint64(btx.ID()), s.failed.Load); err != nil {
			return err
		}
		return fn(btx)
	})
}

// currentTxID is the id of the last transaction committed to db.
func currentTxID(db *bolt.DB) (uint64, error) {
	btx, err := db.Begin(false)
	if err != nil {
		return 0, err
	}
	defer btx.Rollback()
	return uint64(btx.ID()), nil
}

// QueueDepth reports how many Update calls wait for the committer.
func (s *Store) QueueDepth() int64 { return s.queue.Depth() }

// Update enqueues fn and waits until the commit carrying it is durable.
func (s *Store) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if e := s.failed.Load(); e != nil {
		return fmt.Errorf("%w (%w): %v", kernel.ErrUnavailable, kernel.ErrNotCommitted, *e)
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
