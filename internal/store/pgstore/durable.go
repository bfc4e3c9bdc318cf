package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Durable commits. Update returns once its commit is durable
// (kernel.Store), and only then does the tool see the call. PostgreSQL
// answers COMMIT before the commit's WAL is flushed when synchronous_commit
// is off — a throughput tuning an operator may set for the server, the
// database, the role or in the DSN — and a crash of the database then
// loses commits it already answered: an allow decision whose call ran (its
// request id free again: a second run), a consumed token, receipts whose
// seqs the log head gives out again (every replica's Merkle log then holds
// leaves the database no longer has). So every connection of the pool,
// before its first use, raises "off" to "on" for its session. Every other
// value flushes the commit locally before answering (and waits for
// standbys as the operator asked): it is left as it is.
//
// The heartbeat's and the notification listener's own connections (not
// the pool's) commit nothing a decision rests on: a heartbeat lost in a
// crash is beaten again, a lost registration made again (replica.go).
const durableCommits = `SELECT CASE WHEN current_setting('synchronous_commit') = 'off'
	THEN set_config('synchronous_commit', 'on', false) END`

// durable is the pool's AfterConnect: a connection whose commits could
// not be made durable is refused (its dial fails).
func durable(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, durableCommits); err != nil {
		return fmt.Errorf("pgstore: make commits durable (synchronous_commit): %w", err)
	}
	return nil
}
