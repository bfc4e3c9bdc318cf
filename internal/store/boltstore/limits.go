package boltstore

import "time"

const (
	// DefaultHealInterval is how often a failed store tries to reopen.
	DefaultHealInterval = 2 * time.Second
	// QueueCapacity bounds pending Update calls before new ones fail closed.
	QueueCapacity = 16384
	// MaxBatch bounds how many Update calls share one commit, so one commit's
	// latency stays bounded under overload.
	MaxBatch = 4096
	// DefaultAbsorbWindow is how long a commit's transaction keeps taking in
	// calls queued while it is being built (a caller released by one commit
	// then rides the next instead of waiting a whole commit). It never
	// delays a commit when nothing is queued.
	DefaultAbsorbWindow = time.Millisecond
)

// MaxIndexedValue bounds an indexed value (a sub-bucket name). Longer
// values are not indexed; filters on them fall back to decoding receipts.
const MaxIndexedValue = 512

// IndexLag bounds how many committed receipts the audit index may trail
// by before a commit catches it up (index.go, "Batched indexing"). Readers
// never see the lag: they have the index caught up first.
const IndexLag = 256
