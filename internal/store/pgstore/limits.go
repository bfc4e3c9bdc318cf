package pgstore

import "time"

const (
	// QueueCapacity bounds Update calls waiting for a committer; beyond it
	// Update fails closed with kernel.ErrQueueFull.
	QueueCapacity = 16384
	// MaxBatch bounds the functions sharing one transaction.
	MaxBatch = 1024
	// DefaultCommitters is how many transactions one replica has in flight.
	// One is best measured: a batch's reads are pipelined (batch.go), and
	// every commit that appends receipts waits for the one log-head lock,
	// so a second committer mostly splits batches in two (more commits,
	// each holding that lock as long).
	DefaultCommitters = 1
	// CommitTimeout bounds one batch's transaction.
	CommitTimeout = 30 * time.Second
	// ReadTimeout bounds one View.
	ReadTimeout = 30 * time.Second
	// MaxRetries is how often a batch that lost a race (unique key,
	// deadlock, serialization) is retried whole before its functions are
	// retried one transaction each.
	MaxRetries = 3
	// DefaultLease is how long a replica that stopped heartbeating still
	// counts as alive: its calls are not taken over before.
	DefaultLease = 10 * time.Second
	// ClaimLease is how long a claimed deadline stays with its claimant (a
	// claimant that is gone loses it at once). Firing a deadline commits in
	// milliseconds, and Expire re-checks the request inside its
	// transaction, so a claim that lapses too early costs a wasted attempt,
	// never a second effect.
	ClaimLease = 5 * time.Second
	// ScanChunk is how many rows one query of a long scan fetches.
	ScanChunk = 1000
	// MaxNotifyPayload keeps NOTIFY payloads under PostgreSQL's 8000 bytes.
	MaxNotifyPayload = 7800
	// RelayQueue bounds events waiting to be relayed to other replicas.
	RelayQueue = 65536
	// RelayLinger is how long the relay waits to fill one NOTIFY.
	RelayLinger = 2 * time.Millisecond
	// ListenTimeout bounds how long Open waits for its LISTEN connection.
	ListenTimeout = 15 * time.Second
	// FollowInterval is how often the log catches up with other replicas'
	// commits when no notification arrived.
	FollowInterval = time.Second
)
