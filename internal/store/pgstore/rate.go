package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HitRate implements kernel.RateCounter: max_calls_per_minute counted in
// the database, so the limit holds for all replicas together rather than
// for each. Calls are counted per second; the window is the 60 seconds
// ending at now. The count is not worth an fsync (a crash forgets at most
// the last moment of it), so its transaction commits asynchronously.
// Seconds after now count too: a replica whose clock lags must still see
// the calls of one whose clock runs ahead, or together they would pass up
// to twice the limit; but only up to a minute ahead, so that one
// replica's runaway clock cannot use up the limit for all of them.
//
// Hits of one key are serialized by a transaction-scoped advisory lock
// taken in a statement of its own: the counting statement that follows
// then takes its snapshot after every earlier hit of the key committed.
// Without it, the sum over the other seconds was read in a snapshot taken
// before the hit's own row lock was granted, so simultaneous hits on
// different seconds (replicas' clocks, or one replica at a second's edge)
// did not see each other and together passed the limit.
func (s *Store) HitRate(key string, now time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(s.bg, ReadTimeout)
	defer cancel()
	sec := now.Unix()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT set_config('synchronous_commit', 'off', true)")
	b.Queue("SELECT pg_advisory_xact_lock($1, hashtext(encode($2::bytea, 'hex')))", rateLockSpace, []byte(key))
	b.Queue(`WITH hit AS (
			INSERT INTO chio_rate (key, sec, n) VALUES ($1, $2, 1)
			ON CONFLICT (key, sec) DO UPDATE SET n = chio_rate.n + 1 RETURNING n)
		SELECT (SELECT n FROM hit) + coalesce((SELECT sum(n) FROM chio_rate WHERE key = $1 AND sec > $2 - 60 AND sec <> $2 AND sec < $2 + 60), 0)`,
		[]byte(key), sec)
	b.Queue("COMMIT")
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var n int64
	_, err := br.Exec() // BEGIN
	for i := 0; i < 2 && err == nil; i++ {
		_, err = br.Exec() // synchronous_commit, the key's lock
	}
	if err == nil {
		err = br.QueryRow().Scan(&n)
	}
	if err == nil {
		_, err = br.Exec()
	}
	if err != nil {
		return 0, fmt.Errorf("pgstore: rate window: %w", err)
	}
	return int(n), nil
}

// rateLockSpace is the first key of the rate windows' advisory locks
// ("chio"), keeping them apart from other users of the database's.
const rateLockSpace int32 = 0x6368696f
