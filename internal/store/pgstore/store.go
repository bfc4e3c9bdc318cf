package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/commitq"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// Options configures Open. DSN and Key are required; every other zero value
// means the default its comment names.
type Options struct {
	// DSN is a PostgreSQL connection string (URL or key=value). The pool
	// size may be set in it (pool_max_conns); default 4 per CPU, at least 16.
	DSN string
	// Key signs receipts; every replica of one database must hold the same
	// kernel key (the database records it and refuses another).
	Key keys.PrivateKey
	// Log, if set, is loaded with every stored leaf at Open and then follows
	// every commit, this replica's and the others' (logfeed.go).
	Log *receipt.Log
	// Observe, if set, receives each commit that made calls durable: how
	// many (a call whose function failed is not one) and how long it took.
	// A transaction that committed nothing is not reported.
	Observe func(batch int, d time.Duration)
	// Committers is how many transactions this replica runs at once;
	// 0 means DefaultCommitters.
	Committers int
	// Lease is how long a replica that stopped heartbeating counts as alive;
	// 0 means DefaultLease.
	Lease time.Duration
	// Host names this replica in chio_replicas; "" means os.Hostname.
	Host string
	// IdleTxTimeout is how long the server lets one of this replica's
	// transactions sit idle before ending it (session.go); 0 means
	// DefaultIdleTxTimeout.
	IdleTxTimeout time.Duration
}

// Store is a PostgreSQL-backed kernel.Store shared by any number of chiod
// replicas.
type Store struct {
	pool *pgxpool.Pool
	key  keys.PrivateKey
	opts Options
	id   string // this process's replica id (replica.go)
	// schema is the version this build migrated the database to; stale,
	// once set, why it commits nothing more (schema_fence.go): a newer
	// schema, or a database whose receipt log moved back (logfeed.go).
	schema int
	stale  atomic.Pointer[error]

	queue  *commitq.Queue[*op]
	wg     sync.WaitGroup            // committers
	health atomic.Pointer[error]     // the last commit's or heartbeat's failure
	alone  atomic.Bool               // no other live replica (heartbeat): events need no relay
	cutOff atomic.Bool               // the last heartbeat failed (outage.go)
	backAt atomic.Pointer[time.Time] // when the heartbeat last succeeded after failing, or the store opened

	logMu   sync.Mutex             // one feeder of opts.Log at a time (logfeed.go)
	tip     atomic.Pointer[logTip] // the Log's size and last leaf, set under logMu (checkTip)
	lookups chan *query            // Views' keyed reads (reader.go)
	bus     *Bus

	// beforeLatencies, if set (tests), runs before stats read latencies,
	// their last read, after their counts.
	beforeLatencies func()

	bg     context.Context // background work: heartbeat, follower, bus
	stopBg context.CancelFunc
	bgWG   sync.WaitGroup
}

var (
	_ kernel.Store          = (*Store)(nil)
	_ kernel.Replicated     = (*Store)(nil)
	_ kernel.RateCounter    = (*Store)(nil)
	_ kernel.SharedArrivals = (*Store)(nil)
)

type op struct {
	ctx  context.Context
	fn   func(kernel.Tx) error
	done chan error
}

// Open connects, migrates the schema (refusing a newer one), checks the
// kernel key, registers this replica and loads the Merkle log. An error
// that is ErrKeyNotRecorded came before the database was asked to record
// opts.Key (kernelkey.go); any other may have come after.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.DSN == "" {
		return nil, keyNotRecorded{errors.New("pgstore: no DSN")}
	}
	if opts.Committers <= 0 {
		opts.Committers = DefaultCommitters
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	if opts.IdleTxTimeout <= 0 {
		opts.IdleTxTimeout = DefaultIdleTxTimeout
	}
	cfg, err := pgxpool.ParseConfig(opts.DSN)
	if err != nil {
		return nil, keyNotRecorded{fmt.Errorf("pgstore: DSN: %w", dsnParseError(err))}
	}
	// A replica that vanishes mid-transaction must not hold its locks for
	// hours: the server ends its session (session.go).
	sessionParams(cfg.ConnConfig.RuntimeParams, opts.IdleTxTimeout)
	// Every commit is flushed before it is answered, whatever the
	// operator's synchronous_commit (durable.go).
	cfg.AfterConnect = durable
	if !dsnSetsPool(opts.DSN) {
		cfg.MaxConns = int32(max(16, 4*runtime.GOMAXPROCS(0)))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, keyNotRecorded{fmt.Errorf("pgstore: %w", err)}
	}
	s := &Store{pool: pool, key: opts.Key, opts: opts, id: kernel.NewID("rp-"),
		queue: commitq.New[*op](QueueCapacity), lookups: make(chan *query, QueueCapacity)}
	s.bg, s.stopBg = context.WithCancel(context.Background())
	// Just started, it has watched nobody miss a beat: for its first lease
	// it judges nobody gone (outage.go).
	started := time.Now()
	s.backAt.Store(&started)
	if err := s.init(ctx); err != nil {
		s.stopBg()
		pool.Close()
		return nil, err
	}
	for range opts.Committers {
		s.wg.Add(1)
		go s.commitLoop()
	}
	s.bus = newBus(s)
	s.bgWG.Add(3 + readers)
	go s.heartbeat()
	go s.follower()
	go s.bus.listen()
	for range readers {
		go s.readLoop()
	}
	// Serve only once other replicas' events and commits reach this one: a
	// waiter that subscribed before LISTEN held would miss them.
	select {
	case <-s.bus.listening:
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("pgstore: LISTEN: %w", ctx.Err())
	case <-time.After(ListenTimeout):
		s.Close()
		return nil, fmt.Errorf("pgstore: could not LISTEN for other replicas' events within %s", ListenTimeout)
	}
	// Replicas that believed themselves alone relay their events again.
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, "up:"+s.id); err != nil {
		s.Close()
		return nil, fmt.Errorf("pgstore: announce replica: %w", err)
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return keyNotRecorded{fmt.Errorf("pgstore: connect: %w", err)}
	}
	var err error
	if s.schema, err = migrate(ctx, s.pool); err != nil {
		return keyNotRecorded{err} // its transaction holds no kernel key
	}
	if err := s.checkKey(ctx); err != nil {
		return err
	}
	if err := s.register(ctx); err != nil {
		return err
	}
	if s.opts.Log != nil {
		if err := s.loadLog(ctx); err != nil {
			return err
		}
	}
	return nil
}

// ID is this replica's id (one per process start).
func (s *Store) ID() string { return s.id }

// QueueDepth reports how many Update calls wait for a committer.
func (s *Store) QueueDepth() int64 { return s.queue.Depth() }

// Ready reports whether the store can commit: nil, or why not (GET /readyz).
func (s *Store) Ready() error {
	if s.queue.Closed() {
		return errors.New("store closed")
	}
	if err := s.fenced(); err != nil {
		return err
	}
	if e := s.health.Load(); e != nil {
		return fmt.Errorf("database unreachable or failing: %w", *e)
	}
	return nil
}

func (s *Store) setHealth(err error) {
	if err == nil {
		s.health.Store(nil)
		return
	}
	s.health.Store(&err)
}

// Update queues fn and waits until the transaction carrying it commits (or
// fails). A store fenced by a newer schema refuses at once (schema_fence.go).
func (s *Store) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if err := s.fenced(); err != nil {
		return fmt.Errorf("%w (%w): %w", kernel.ErrUnavailable, kernel.ErrNotCommitted, err)
	}
	o := &op{ctx: ctx, fn: fn, done: make(chan error, 1)}
	if err := s.queue.Put(o); err != nil {
		return err
	}
	// Wait even if ctx ends: the work is queued and may commit; the caller
	// learns the outcome.
	return <-o.done
}

// View runs fn with a read view over committed state.
func (s *Store) View(fn func(kernel.ReadTx) error) error {
	ctx, cancel := context.WithTimeout(s.bg, ReadTimeout)
	defer cancel()
	rt := &readTx{s: s, ctx: ctx}
	defer rt.release()
	if err := fn(rt); err != nil {
		return err
	}
	return rt.err
}

// Close stops taking work, commits everything queued, tells the other
// replicas this one is gone (its calls in flight are theirs to finish at
// once) and closes the pool.
func (s *Store) Close() error {
	if !s.queue.Close() {
		return nil
	}
	s.wg.Wait()
	s.bus.close()
	s.stopBg()
	s.bgWG.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.pool.Exec(ctx, "DELETE FROM chio_replicas WHERE id = $1", s.id)
	s.pool.Close()
	return err
}

// dsnSetsPool reports whether the DSN sizes the pool itself.
func dsnSetsPool(dsn string) bool { return strings.Contains(dsn, "pool_max_conns") }

// querier is what reads need: a pooled connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
