package pgstore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
)

// The schema fence. A replica refuses to start on a database migrated by
// a newer build (migrate.go); one already running when a newer build
// migrates (a rolling upgrade) must stop committing from that moment: it
// does not know what the newer schema means.
//
// Every commit transaction opens (in its first round trip, with BEGIN: no
// round trip of its own) by taking the migrations' advisory lock SHARED,
// then reading the schema version in a statement of its own (a snapshot
// taken once the lock is held). Migrations hold that lock exclusively for
// their whole transaction, so the two are ordered: a commit in flight
// finishes before a migration starts, and a commit that starts during a
// migration waits for it, then reads the new version. A transaction whose
// version is newer than this build's sends nothing more and rolls back:
// every function in it gets ErrSchemaTooNew (certainly not committed), the
// store is fenced for good (Update refuses at once, Ready reports it, it
// claims no orphaned call and no deadline) and the log says why. The
// heartbeat reads the version too, so an idle replica turns unready within
// a beat. Its own calls in flight stay its own while it lives (it still
// heartbeats): they are taken over once it stops.

// schemaLock and schemaRead open every commit transaction (batch.go send).
const (
	schemaLock = "SELECT pg_advisory_xact_lock_shared($1)"
	schemaRead = "SELECT coalesce(max(version), 0) FROM chio_schema"
)

// schemaGuard queues the fence's two statements, reading the version into v.
func schemaGuard(v *int) []*pgx.QueuedQuery {
	read := &pgx.QueuedQuery{SQL: schemaRead}
	read.QueryRow(func(row pgx.Row) error { return row.Scan(v) })
	return []*pgx.QueuedQuery{{SQL: schemaLock, Arguments: []any{int64(migrationLock)}}, read}
}

// checkSchema fences the store if the database is at version db, newer
// than this build's, and returns why the store is fenced; nil if it is not
// (it may be for a receipt log that moved back: logfeed.go).
func (s *Store) checkSchema(db int) error {
	if db <= s.schema {
		return s.fenced()
	}
	err := fmt.Errorf("%w: the database was migrated to version %d while this replica (version %d) was running; "+
		"it commits nothing more: upgrade it", ErrSchemaTooNew, db, s.schema)
	if s.stale.CompareAndSwap(nil, &err) {
		slog.Error("database schema is newer than this chiod: refusing every commit from now on", "err", err)
	}
	return *s.stale.Load()
}

// fenced returns why the store commits nothing more, or nil.
func (s *Store) fenced() error {
	if e := s.stale.Load(); e != nil {
		return *e
	}
	return nil
}

// checkSchema makes sure the transaction read the schema version (a batch
// whose functions read nothing has not sent its first round trip yet) and
// fences the store if it is newer than this build's. A batch that neither
// read nor wrote never touched the database and is let be.
func (b *batchTx) checkSchema() error {
	if !b.begun {
		if b.base.empty() {
			return nil
		}
		if err := b.send(&pgx.Batch{}); err != nil {
			return err
		}
	}
	return b.s.checkSchema(b.schema)
}

// behindFence runs fn in a transaction opened as a commit's is (the
// fence's lock taken shared, then the schema version read), for the writes
// made outside the commit queue: claims and checkpoints. A newer version
// fences the store and runs nothing: ErrSchemaTooNew. Without it, such a
// write made between a migration and the moment this replica noticed it
// would land under the newer schema.
func (s *Store) behindFence(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := s.fenced(); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	var v int
	if err := tx.SendBatch(ctx, &pgx.Batch{QueuedQueries: schemaGuard(&v)}).Close(); err != nil {
		return err
	}
	if err := s.checkSchema(v); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
