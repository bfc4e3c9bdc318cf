// Package pgstore is the PostgreSQL kernel.Store, for several chiod
// replicas behind a load balancer on one database (SPEC §8, §9 "Store").
//
// Writes ride a group commit like boltstore's: Update queues a function,
// and a few committer goroutines each run everything queued since their
// last transaction in ONE PostgreSQL transaction (commit.go). A function's
// reads lock the rows they return (SELECT … FOR UPDATE), its writes are
// buffered in an overlay and written at the end of the batch in one
// pipelined round trip, so a function that fails (or panics) is dropped
// alone without a savepoint. Receipts are numbered last: the transaction
// advances the single row of chio_log_head, which every receipt-appending
// commit of every replica locks, so seq is gapless and the log has one
// order; the receipts are signed under that lock and copied in, and the
// commit is one fsync. Unique keys are the authority for what must happen
// once: a request id, a consumed token id, a counter's first row. A
// transaction that loses such a race, or a deadlock, is retried from the
// start; its functions then see the winner's state.
//
// The receipt log is one log: every replica's receipt.Log holds every
// replica's leaves, fed after its own commits (catching up from the
// database first) and from the commits of others, announced with
// LISTEN/NOTIFY (logfeed.go). Replicas share the kernel key, so their
// checkpoints are interchangeable signatures over the same tree; the
// database records the key and a replica with another one refuses to start.
//
// What replicas need besides: claims on deadlines and on calls of replicas
// that are gone (replica.go, kernel.Replicated), events relayed between
// replicas (bus.go, kernel.EventRelay), max_calls_per_minute counted in
// the database (rate.go, kernel.RateCounter), and the votes each replica is
// presenting, which the others' deadlines wait for (arrivals.go,
// kernel.SharedArrivals). The audit side — queries,
// stats, export, checkpoints — is answered from indexed columns
// (query.go, stats.go, export.go, checkpoints.go).
//
// The schema is embedded and versioned (migrate.go); a database migrated by
// a newer build is refused. This package must never import net/http or a
// channel SDK.
package pgstore
