package receipt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/internal/keys"
)

// Log is the live Merkle log of SPEC §3: an in-memory Tree over the leaf
// hash of every stored receipt, in seq order (leaf index = seq-1), plus the
// signed checkpoints (tree heads) of it.
//
// The store feeds it: Load once when it opens (before any commit can
// happen), then Append after every durable commit, in seq order. So the tree
// never holds a receipt that is not durable, and a checkpoint never covers
// one. Checkpoints are signed with the kernel key every Every receipts or
// every Interval, whichever comes first, and only when the tree grew; each
// is stored durably (CheckpointStore) before it is served.
type Log struct {
	key  keys.PrivateKey
	opts LogOptions
	tree *Tree

	mu     sync.Mutex
	grown  chan struct{} // closed and replaced on every Append: wakes waiters
	broken error         // a non-contiguous Append: nothing is proven any more

	signMu sync.Mutex // one signer at a time, so concurrent callers share a head
	head   atomic.Pointer[head]
	store  CheckpointStore

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

type head struct {
	raw []byte
	cp  *Checkpoint
}

// CheckpointStore keeps signed checkpoints durably, keyed by tree size.
type CheckpointStore interface {
	PutCheckpoint(ctx context.Context, size uint64, raw []byte) error
	// LatestCheckpoint returns the stored checkpoint of the largest size,
	// or nil when there is none.
	LatestCheckpoint() ([]byte, error)
	// Checkpoints visits stored checkpoints with tree_size ≥ from in
	// ascending size; fn returns false to stop. raw is valid only during fn.
	Checkpoints(from uint64, fn func(size uint64, raw []byte) bool) error
}

// LogOptions configures a Log; the zero value is valid.
type LogOptions struct {
	// Every signs a checkpoint once the tree grew by this many receipts
	// since the last one; 0 means 1000.
	Every uint64
	// Interval signs a checkpoint this often if the tree grew at all; 0
	// means 10 s.
	Interval time.Duration
	// Now stamps checkpoints; nil means time.Now.
	Now func() time.Time
	// OnError reports background checkpoint failures; nil drops them (the
	// next tick retries).
	OnError func(error)
}

// Sentinel errors of the Log.
var (
	// ErrLogCorrupt: the stored leaves do not match a signed checkpoint, or
	// the store appended out of order. Nothing the log says can be trusted.
	ErrLogCorrupt = errors.New("receipt log corrupt")
	// ErrNotInLog: a seq or size beyond the log.
	ErrNotInLog = errors.New("not in the receipt log yet")
	// ErrLogNotStarted: Start has not run (or Close has).
	ErrLogNotStarted = errors.New("receipt log not started")
)

// NewLog returns an empty log that signs checkpoints with key.
func NewLog(key keys.PrivateKey, opts LogOptions) *Log {
	if opts.Every == 0 {
		opts.Every = 1000
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Log{key: key, opts: opts, tree: &Tree{}, grown: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// Load replaces the tree with one built from leaves (the store's leaf hashes
// for seq 1..len(leaves)). The store calls it once, before any Append.
func (l *Log) Load(leaves [][32]byte) {
	t := NewTreeFromLeaves(leaves)
	l.mu.Lock()
	l.tree = t
	l.mu.Unlock()
}

// Append adds the leaves of receipts first, first+1, … just made durable.
// A gap or overlap marks the log corrupt (fail closed) instead of proving
// something false.
func (l *Log) Append(first uint64, leaves [][32]byte) {
	l.mu.Lock()
	if l.broken == nil && first != l.tree.Size()+1 {
		l.broken = fmt.Errorf("%w: append at seq %d, tree holds %d", ErrLogCorrupt, first, l.tree.Size())
	}
	if l.broken == nil {
		for _, h := range leaves {
			l.tree.Append(h)
		}
	}
	close(l.grown)
	l.grown = make(chan struct{})
	size := l.tree.Size()
	l.mu.Unlock()
	if h := l.head.Load(); h != nil && size-h.cp.TreeSize >= l.opts.Every {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// Size is the number of receipts in the tree.
func (l *Log) Size() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tree.Size()
}

func (l *Log) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}

// Start checks the latest stored checkpoint against the tree (a store whose
// leaves no longer produce a root it signed was altered: Start refuses),
// signs a checkpoint if the tree outgrew it, and starts the background
// signer. Stop it with Close.
func (l *Log) Start(ctx context.Context, store CheckpointStore) error {
	l.store = store
	raw, err := store.LatestCheckpoint()
	if err != nil {
		return fmt.Errorf("receipt log: %w", err)
	}
	if raw != nil {
		cp, err := VerifyCheckpoint(raw, l.key.Public())
		if err != nil {
			return fmt.Errorf("%w: latest stored checkpoint: %w", ErrLogCorrupt, err)
		}
		if err := l.matches(cp); err != nil {
			return err
		}
		l.head.Store(&head{raw: raw, cp: cp})
	}
	if _, _, err := l.Checkpoint(ctx); err != nil {
		return err
	}
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.run(l.stop, l.done)
	return nil
}

// matches checks that cp's root is the tree's root at cp's size.
func (l *Log) matches(cp *Checkpoint) error {
	size := l.Size()
	if cp.TreeSize > size {
		return fmt.Errorf("%w: checkpoint covers %d receipts, the store holds %d", ErrLogCorrupt, cp.TreeSize, size)
	}
	root, err := l.tree.Root(cp.TreeSize)
	if err != nil {
		return err
	}
	if want, _ := cp.Root(); root != want {
		return fmt.Errorf("%w: root of the first %d stored receipts is %s, the signed checkpoint says %s", ErrLogCorrupt, cp.TreeSize, HashHex(root), cp.RootHash)
	}
	return nil
}

func (l *Log) run(stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	t := time.NewTicker(l.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-l.kick:
		}
		if _, _, err := l.Checkpoint(ctx); err != nil && l.opts.OnError != nil && ctx.Err() == nil {
			l.opts.OnError(err)
		}
	}
}

// Close stops the background signer and signs a last checkpoint if the tree
// grew, so a clean shutdown leaves the whole log covered. Call it before the
// store stops taking writes.
func (l *Log) Close(ctx context.Context) error {
	if l.stop == nil {
		return nil
	}
	close(l.stop)
	<-l.done
	l.stop = nil
	_, _, err := l.Checkpoint(ctx)
	return err
}

// Latest returns the latest durable checkpoint: its signed bytes (serve
// these) and parsed form.
func (l *Log) Latest() ([]byte, *Checkpoint, error) {
	h := l.head.Load()
	if h == nil {
		return nil, nil, ErrLogNotStarted
	}
	return h.raw, h.cp, nil
}

// Checkpoint signs and durably stores a checkpoint of the current tree if
// it grew since the latest one, and returns the latest.
func (l *Log) Checkpoint(ctx context.Context) ([]byte, *Checkpoint, error) {
	if err := l.check(); err != nil {
		return nil, nil, err
	}
	if l.store == nil {
		return nil, nil, ErrLogNotStarted
	}
	l.signMu.Lock()
	defer l.signMu.Unlock()
	size := l.Size()
	if h := l.head.Load(); h != nil && h.cp.TreeSize >= size {
		return h.raw, h.cp, nil
	}
	root, err := l.tree.Root(size)
	if err != nil {
		return nil, nil, err
	}
	raw, cp, err := SignCheckpoint(l.key, size, root, l.opts.Now())
	if err != nil {
		return nil, nil, err
	}
	if err := l.store.PutCheckpoint(ctx, size, raw); err != nil {
		return nil, nil, fmt.Errorf("receipt log: store checkpoint %d: %w", size, err)
	}
	l.head.Store(&head{raw: raw, cp: cp})
	return raw, cp, nil
}

// Cover returns a checkpoint that covers seq, signing a fresh one when the
// latest is older than seq. A receipt is readable from the store a moment
// before its commit reaches the log, so Cover waits for it (bounded by ctx).
func (l *Log) Cover(ctx context.Context, seq uint64) ([]byte, *Checkpoint, error) {
	if err := l.waitSize(ctx, seq); err != nil {
		return nil, nil, err
	}
	if h := l.head.Load(); h != nil && h.cp.TreeSize >= seq {
		return h.raw, h.cp, nil
	}
	raw, cp, err := l.Checkpoint(ctx)
	if err == nil && cp.TreeSize < seq {
		err = fmt.Errorf("%w: seq %d", ErrNotInLog, seq)
	}
	return raw, cp, err
}

func (l *Log) waitSize(ctx context.Context, size uint64) error {
	for {
		l.mu.Lock()
		n, grown, broken := l.tree.Size(), l.grown, l.broken
		l.mu.Unlock()
		if broken != nil {
			return broken
		}
		if n >= size {
			return nil
		}
		select {
		case <-grown:
		case <-ctx.Done():
			return fmt.Errorf("%w: seq %d (log holds %d): %w", ErrNotInLog, size, n, ctx.Err())
		}
	}
}

// Prove returns the inclusion proof of the receipt with seq, whose stored
// bytes are raw, against the checkpoint cp (which must cover seq). The leaf
// is recomputed from raw and must equal the tree's: a mismatch means the
// stored receipt changed after it was logged.
func (l *Log) Prove(seq uint64, raw []byte, cp *Checkpoint) (InclusionProof, error) {
	if err := l.check(); err != nil {
		return InclusionProof{}, err
	}
	if seq == 0 || seq > cp.TreeSize {
		return InclusionProof{}, fmt.Errorf("%w: seq %d, checkpoint size %d", ErrNotInLog, seq, cp.TreeSize)
	}
	leaf := LeafHash(raw)
	if got, err := l.tree.Leaf(seq - 1); err != nil {
		return InclusionProof{}, err
	} else if got != leaf {
		return InclusionProof{}, fmt.Errorf("%w: stored receipt at seq %d does not hash to its logged leaf", ErrLogCorrupt, seq)
	}
	path, err := l.tree.InclusionProof(seq-1, cp.TreeSize)
	if err != nil {
		return InclusionProof{}, err
	}
	return InclusionProof{LeafIndex: seq - 1, TreeSize: cp.TreeSize, LeafHash: HashHex(leaf), Hashes: ProofToHex(path)}, nil
}

// Consistency proves that the tree of size to extends the tree of size from.
func (l *Log) Consistency(from, to uint64) (ConsistencyProof, error) {
	if err := l.check(); err != nil {
		return ConsistencyProof{}, err
	}
	p, err := l.tree.ConsistencyProof(from, to)
	if err != nil {
		return ConsistencyProof{}, fmt.Errorf("%w: %w", ErrNotInLog, err)
	}
	return ConsistencyProof{From: from, To: to, Hashes: ProofToHex(p)}, nil
}

// CheckpointAt returns the stored checkpoint of exactly size, or nil.
func (l *Log) CheckpointAt(size uint64) ([]byte, error) {
	if l.store == nil {
		return nil, ErrLogNotStarted
	}
	var out []byte
	err := l.store.Checkpoints(size, func(s uint64, raw []byte) bool {
		if s == size {
			out = append([]byte(nil), raw...)
		}
		return false
	})
	return out, err
}

// Leaf returns the leaf hash at index.
func (t *Tree) Leaf(index uint64) ([32]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if index >= t.size() {
		return [32]byte{}, fmt.Errorf("%w: leaf %d, tree size %d", ErrIndexOutOfRange, index, t.size())
	}
	return t.levels[0][index], nil
}
