//go:build unix

package daemon_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/daemon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
)

// A start on PostgreSQL refused before the database could have recorded
// the kernel key the start made (chiod could not connect, the DSN names
// no such database or role, the schema is newer than this chiod, the DSN
// is not set) removes that key with everything else it created: nothing
// in the database knows it. One refused after (here: the key's INSERT
// committed but its answer was lost) keeps it, and says so.

const pgStore = "[store]\ndriver = \"postgres\"\ndsn_env = \"CHIO_TEST_DSN\"\n"

// wantRefusedLeavingNothing runs chiod on a data dir it must create, and
// on one that exists and is empty: both refused with an error containing
// want, both leaving the data dir as it was.
func wantRefusedLeavingNothing(t *testing.T, cfg, want string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "chio-data")
	err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("refused start: %v, want an error containing %q", err, want)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the refused start left its data dir behind, holding %v", names(dirContent(t, dir)))
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	err = runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("refused start on an existing empty data dir: %v, want an error containing %q", err, want)
	}
	wantSameContent(t, dir, map[string]string{})
}

// Nothing listens on the DSN's port. Needs no PostgreSQL.
func TestRefusedStartLeavesDataDirAsItWasOnPostgresUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("CHIO_TEST_DSN", "postgres://chio@"+addr+"/chio?sslmode=disable&connect_timeout=5")
	wantRefusedLeavingNothing(t, policyWith(t, pgStore), "connect")
}

// [store] dsn_env names a variable that is not set.
func TestRefusedStartLeavesDataDirAsItWasOnPostgresDSNUnset(t *testing.T) {
	t.Setenv("CHIO_TEST_DSN", "")
	wantRefusedLeavingNothing(t, policyWith(t, pgStore), "CHIO_TEST_DSN")
}

// The server answers, but the DSN names a database, or a role, it does not
// have.
func TestRefusedStartLeavesDataDirAsItWasOnPostgresWrongDatabaseOrRole(t *testing.T) {
	u, err := url.Parse(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := policyWith(t, pgStore)
	noDB := *u
	noDB.Path = "/chio_no_such_database"
	t.Setenv("CHIO_TEST_DSN", noDB.String())
	wantRefusedLeavingNothing(t, cfg, "chio_no_such_database")

	noRole := *u
	noRole.User = url.User("chio_no_such_role")
	t.Setenv("CHIO_TEST_DSN", noRole.String())
	wantRefusedLeavingNothing(t, cfg, "chio_no_such_role")
}

// The database was migrated by a newer chiod: migrate refuses it, before
// the key is asked to be recorded.
func TestRefusedStartLeavesDataDirAsItWasOnPostgresSchemaTooNew(t *testing.T) {
	dsn := pgtest.Database(t)
	execSQL(t, dsn, `CREATE TABLE chio_schema (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()); INSERT INTO chio_schema VALUES (9999, '9999_future.sql')`)
	t.Setenv("CHIO_TEST_DSN", dsn)
	wantRefusedLeavingNothing(t, policyWith(t, pgStore), "newer")
}

// After a start refused because the database could not be reached, the
// next start (the database now reachable) on the same data dir generates
// a key of its own, which the database records.
func TestStartAfterPostgresUnreachableMakesAFreshKey(t *testing.T) {
	dsn := pgtest.Database(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := policyWith(t, pgStore)
	dir := t.TempDir()
	t.Setenv("CHIO_TEST_DSN", "postgres://chio@"+addr+"/chio?sslmode=disable&connect_timeout=5")
	if err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir}); err == nil {
		t.Fatal("chiod started on a database nobody serves")
	}
	wantSameContent(t, dir, map[string]string{})

	t.Setenv("CHIO_TEST_DSN", dsn)
	if err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir}); err != nil {
		t.Fatalf("the next start, on a reachable database: %v", err)
	}
	key, err := keys.LoadPrivateKey(filepath.Join(dir, daemon.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := recordedKey(t, dsn); got != key.Public().String() {
		t.Fatalf("the database recorded %s, the data dir's kernel.pem is %s", got, key.Public())
	}
}

// The INSERT that records the new key commits, and its answer is lost on
// the way back. chiod cannot know the key was recorded, so the key stays
// (and the error says so), while everything else the start made goes.
// The next start on that data dir is the kernel the database knows.
func TestRefusedStartOnPostgresKeepsAKeyItMayHaveRecorded(t *testing.T) {
	dsn := pgtest.Database(t)
	t.Setenv("CHIO_TEST_DSN", pgtest.LoseAnswer(t, dsn, "'kernel_key'"))
	cfg := policyWith(t, pgStore)
	dir := t.TempDir()
	err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir})
	if err == nil {
		t.Fatal("chiod started though the answer recording its key was lost")
	}
	if !strings.Contains(err.Error(), "is kept in "+filepath.Join(dir, daemon.KeyFile)) ||
		!strings.Contains(err.Error(), "may have recorded") {
		t.Fatalf("the refusal does not say the kernel key file was kept: %v", err)
	}
	left := dirContent(t, dir)
	if len(left) != 1 || left[daemon.KeyFile] == "" {
		t.Fatalf("the refused start left %v, want kernel.pem alone", names(left))
	}
	key, err := keys.LoadPrivateKey(filepath.Join(dir, daemon.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := recordedKey(t, dsn); got != key.Public().String() {
		t.Fatalf("the database recorded %s, the kept kernel.pem is %s", got, key.Public())
	}

	t.Setenv("CHIO_TEST_DSN", dsn)
	if err := runBriefly(t, daemon.Options{ConfigPath: cfg, DataDir: dir}); err != nil {
		t.Fatalf("the next start, with the kept key: %v", err)
	}
}

func execSQL(t *testing.T, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// recordedKey is the kernel key the database recorded ("" for none).
func recordedKey(t *testing.T, dsn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var v string
	err = c.QueryRow(ctx, "SELECT value FROM chio_meta WHERE key = 'kernel_key'").Scan(&v)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return v
}
