package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations are embedded, numbered NNNN_name.sql, and applied in order,
// each at most once, recorded in chio_schema. They run in one transaction
// under an advisory lock, so replicas starting together migrate once; every
// commit transaction takes that lock shared, so a migration waits for the
// commits in flight, and older replicas running then commit nothing after
// it (schema_fence.go).

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the advisory lock key migrations hold ("chio" in ASCII).
const migrationLock = 0x6368696f

// ErrSchemaTooNew: the database was migrated by a newer chiod. This build
// does not know what the newer schema means and refuses to touch it.
var ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this chiod")

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("pgstore: migration %s is not named NNNN_name.sql", e.Name())
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("pgstore: migrations must be numbered 1..n without gaps; %s is #%d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the newest schema this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err) // the embedded files are part of the build
	}
	return len(ms)
}

// migrate brings the database to this build's schema, or refuses a newer
// one (ErrSchemaTooNew) without changing anything.
func migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	ms, err := migrations()
	if err != nil {
		return 0, err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS chio_schema (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, err
	}
	var cur int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM chio_schema").Scan(&cur); err != nil {
		return 0, err
	}
	if cur > len(ms) {
		return cur, fmt.Errorf("%w: the database is at version %d, this build knows %d; upgrade chiod (never downgrade a migrated database)",
			ErrSchemaTooNew, cur, len(ms))
	}
	for _, m := range ms[cur:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return cur, fmt.Errorf("pgstore: migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO chio_schema (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return cur, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return cur, err
	}
	return len(ms), nil
}
