package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chiokernel/chio/kernel"
)

// Replicas. Each chiod process registers a row in chio_replicas under a
// fresh id and heartbeats it; a call in flight is owned by the replica that
// moved it to dispatching (flush.go). When a replica's heartbeat is older
// than the lease, it is gone: its calls are claimed by another replica
// (ClaimOrphans) and finished like a crash recovery. A replica that shuts
// down cleanly deletes its row, so its calls are taken over at once.
//
// Liveness is judged by the database's clock, never by the replicas' own,
// so replicas with skewed clocks still agree on who is gone. Deadlines are
// the kernel's (approval expires_at is set by the kernel's clock).

// dbNowMS is the database's clock in unix milliseconds.
const dbNowMS = "(extract(epoch from clock_timestamp()) * 1000)::bigint"

func (s *Store) register(ctx context.Context) error { return s.registerOn(ctx, s.pool) }

// execer runs a statement: the pool, or the heartbeat's own connection.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (s *Store) registerOn(ctx context.Context, db execer) error {
	_, err := db.Exec(ctx, `INSERT INTO chio_replicas (id, host, started_ms, heartbeat_ms)
		VALUES ($1, $2, `+dbNowMS+`, `+dbNowMS+`)`, s.id, s.opts.Host)
	if err != nil {
		return fmt.Errorf("pgstore: register replica: %w", err)
	}
	return nil
}

// heartbeat keeps this replica alive in the database, reports a database
// that cannot be reached (Ready), and prunes what nobody needs any more:
// rows of replicas gone for a day with no call left, and rate windows.
//
// It beats on a connection of its own, never the pool's. A pool starved
// by slow reads, exports or commits queued on a lock says nothing about
// whether this replica is alive, and a heartbeat waiting for a pooled
// connection aged past the lease: other replicas then took over this live
// replica's calls in flight (an at_least_once call sent a second time
// while this one was still delivering it). One beat is bounded by half
// the lease, so a beat that hangs leaves time for another before the
// lease runs out; its connection is then dropped and dialled again.
func (s *Store) heartbeat() {
	defer s.bgWG.Done()
	t := time.NewTicker(max(s.opts.Lease/5, 100*time.Millisecond))
	defer t.Stop()
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	var pruning atomic.Bool
	beats := 0
	for {
		select {
		case <-s.bg.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.bg, max(s.opts.Lease/2, 50*time.Millisecond))
		var err error
		if conn == nil {
			conn, err = pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
		}
		if err == nil {
			err = s.beat(ctx, conn)
			if err != nil {
				conn.Close(context.Background()) // its state is unknown: dial again
			}
		}
		if err != nil {
			conn = nil
			if s.bg.Err() == nil {
				slog.Warn("replica heartbeat failed", "err", err)
				s.setHealth(err)
				s.noteReach(false)
			}
		} else {
			s.setHealth(nil) // reachable again (a failing commit says otherwise at once)
			s.noteReach(true)
		}
		cancel()
		// Pruning deletes rows at leisure, on the pool, and never holds up
		// the next beat.
		if beats++; beats%50 == 0 && pruning.CompareAndSwap(false, true) {
			s.bgWG.Add(1) // the heartbeat's own count keeps Wait from returning first
			go func() {
				defer s.bgWG.Done()
				defer pruning.Store(false)
				ctx, cancel := context.WithTimeout(s.bg, ReadTimeout)
				defer cancel()
				s.prune(ctx)
			}()
		}
	}
}

// beat records this replica's heartbeat on conn, and learns whether any
// other replica is alive and whether a newer build migrated the database.
func (s *Store) beat(ctx context.Context, conn *pgx.Conn) error {
	tag, err := conn.Exec(ctx, `UPDATE chio_replicas SET heartbeat_ms = `+dbNowMS+` WHERE id = $1`, s.id)
	if err == nil && tag.RowsAffected() == 0 {
		// Someone removed our row (an operator, or we were gone too long
		// and were pruned): come back. Our calls may have been taken
		// over; their settle commits then fail as conflicts.
		err = s.registerOn(ctx, conn)
	}
	if err != nil {
		return err
	}
	var others, schema int
	err = conn.QueryRow(ctx, `SELECT count(*), (`+schemaRead+`) FROM chio_replicas WHERE id <> $1 AND heartbeat_ms >= `+dbNowMS+` - $2`,
		s.id, s.opts.Lease.Milliseconds()).Scan(&others, &schema)
	// A replica that starts now is told nothing until the next beat:
	// its waiters started after this check, and they re-read state.
	s.alone.Store(err == nil && others == 0)
	if err == nil {
		s.checkSchema(schema) // a newer build migrated: fenced, unready (schema_fence.go)
	}
	return err
}

func (s *Store) prune(ctx context.Context) {
	_, _ = s.pool.Exec(ctx, `DELETE FROM chio_replicas r WHERE r.heartbeat_ms < `+dbNowMS+` - 86400000
		AND NOT EXISTS (SELECT 1 FROM chio_calls c WHERE c.status = 'dispatching' AND c.owner = r.id)`)
	_, _ = s.pool.Exec(ctx, `DELETE FROM chio_rate WHERE sec < (`+dbNowMS+` / 1000) - 300`)
	_, _ = s.pool.Exec(ctx, `DELETE FROM chio_vote_arrivals WHERE created_ms < `+dbNowMS+` - $1`, ArrivalBound.Milliseconds())
}

// ClaimDeadlines implements kernel.Replicated: pending requests due at now
// (the kernel's clock), not held by another live replica's claim, are
// claimed for ClaimLease. A replica may claim one request again by id (its
// timer retrying), never in a sweep (its timer may be firing it right
// now). SKIP LOCKED passes over requests another transaction is changing
// right now; a later sweep sees them.
func (s *Store) ClaimDeadlines(ctx context.Context, now time.Time, id string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	// Behind the schema fence: a fenced replica cannot fire a deadline, so
	// it claims none, and the upgraded replicas need not wait out its
	// claims (schema_fence.go).
	var ids []string
	err := s.behindFence(ctx, func(tx pgx.Tx) (err error) {
		ids, err = claimDeadlines(ctx, tx, []any{s.id, now.Unix(), limit, ClaimLease.Milliseconds(), id, s.opts.Lease.Milliseconds()})
		return err
	})
	if errors.Is(err, ErrSchemaTooNew) || errors.Is(err, ErrLogForked) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: claim deadlines: %v", kernel.ErrUnavailable, err)
	}
	return ids, nil
}

// claimDeadlines is ClaimDeadlines's statement, in tx.
func claimDeadlines(ctx context.Context, tx pgx.Tx, args []any) ([]string, error) {
	rows, err := tx.Query(ctx, `UPDATE chio_approvals SET claimed_by = $1, claim_until = `+dbNowMS+` + $4
		WHERE approval_id IN (
			SELECT approval_id FROM chio_approvals
			WHERE status = 'pending' AND expires_at <= $2
				AND (claim_until < `+dbNowMS+` OR ($5::text <> '' AND claimed_by = $1) OR NOT EXISTS (SELECT 1 FROM chio_replicas r
					WHERE r.id = claimed_by AND r.heartbeat_ms >= `+dbNowMS+` - $6))
				AND ($5::text = '' OR approval_id = $5::text)
			ORDER BY expires_at LIMIT $3
			FOR UPDATE SKIP LOCKED)
		RETURNING approval_id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var claimed string
		if err := rows.Scan(&claimed); err != nil {
			return nil, err
		}
		ids = append(ids, claimed)
	}
	return ids, rows.Err()
}

// ClaimOrphans implements kernel.Replicated: calls dispatching under a
// replica whose heartbeat is older than the lease (or that is gone from
// chio_replicas) become this replica's — none while this replica's own
// heartbeat fails or beat again less than a lease ago (outage.go).
func (s *Store) ClaimOrphans(ctx context.Context, limit int) ([]*kernel.CallRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	if s.justBack() {
		// Cut off from the database a moment ago: the others' heartbeats
		// may be stale only because they were cut off too (outage.go).
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	// Behind the schema fence: a fenced replica cannot finish a call, so it
	// takes over none, and leaves them to the upgraded replicas
	// (schema_fence.go).
	var out []*kernel.CallRecord
	err := s.behindFence(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE chio_calls SET owner = $1
		WHERE request_id IN (
			SELECT c.request_id FROM chio_calls c
			WHERE c.status = 'dispatching' AND c.owner IS DISTINCT FROM $1
				AND NOT EXISTS (SELECT 1 FROM chio_replicas r
					WHERE r.id = c.owner AND r.heartbeat_ms >= `+dbNowMS+` - $2)
			LIMIT $3
			FOR UPDATE OF c SKIP LOCKED)
		RETURNING request_id, rec`, s.id, s.opts.Lease.Milliseconds(), limit)
		if err != nil {
			return err
		}
		out, err = scanCalls(rows)
		return err
	})
	if errors.Is(err, ErrSchemaTooNew) || errors.Is(err, ErrLogForked) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: claim orphaned calls: %v", kernel.ErrUnavailable, err)
	}
	if len(out) > 0 {
		slog.Info("took over calls in flight of replicas that are gone", "calls", len(out))
	}
	return out, nil
}

// OwnDispatching implements kernel.Replicated: up to limit calls
// dispatching under this replica, with request ids after after, in id
// order (the index chio_calls_dispatching serves it).
func (s *Store) OwnDispatching(ctx context.Context, after string, limit int) ([]*kernel.CallRecord, error) {
	if limit <= 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT request_id, rec FROM chio_calls
		WHERE status = 'dispatching' AND owner = $1 AND request_id > $2
		ORDER BY request_id LIMIT $3`, s.id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: list own calls in flight: %v", kernel.ErrUnavailable, err)
	}
	return scanCalls(rows)
}

// scanCalls reads (request_id, rec) rows into call records, and closes rows.
func scanCalls(rows pgx.Rows) ([]*kernel.CallRecord, error) {
	defer rows.Close()
	var out []*kernel.CallRecord
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, err
		}
		c, err := decodeCall(id, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
