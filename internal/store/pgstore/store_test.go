package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

func exec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// Opening migrates once (replicas starting together included); a database
// migrated by a newer build is refused, untouched.
func TestMigrations(t *testing.T) {
	dsn := pgtest.Database(t)
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			s, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: storetest.Key()})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	exec(t, dsn, "INSERT INTO chio_schema (version, name) VALUES ($1, 'from the future')", pgstore.SchemaVersion()+1)
	_, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: storetest.Key()})
	if !errors.Is(err, pgstore.ErrSchemaTooNew) || !errors.Is(err, pgstore.ErrKeyNotRecorded) {
		t.Fatalf("newer schema: %v, want ErrSchemaTooNew, before the key is recorded", err)
	}
}

// A replica whose kernel key is not the one the database's log is signed
// with refuses to start, and says what to do.
func TestKeyMismatchRefused(t *testing.T) {
	dsn := pgtest.Database(t)
	openPG(t, dsn)
	other := keys.FromSeed(bytes.Repeat([]byte{9}, 32))
	_, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: other})
	if !errors.Is(err, pgstore.ErrKeyMismatch) || !strings.Contains(err.Error(), "copy kernel.pem") {
		t.Fatalf("another key: %v", err)
	}
	if !errors.Is(err, pgstore.ErrKeyNotRecorded) {
		t.Fatalf("another key: %v, want ErrKeyNotRecorded (the database keeps its own)", err)
	}
}

// A database that cannot be reached fails Open with the reason.
func TestUnreachableDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pgstore.Open(ctx, pgstore.Options{DSN: "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", Key: storetest.Key()})
	if err == nil {
		t.Fatal("opened a database that does not exist")
	}
	if !errors.Is(err, pgstore.ErrKeyNotRecorded) {
		t.Fatalf("unreachable: %v, want ErrKeyNotRecorded", err)
	}
}

// Open fails after the key's INSERT was sent: the key may be recorded, and
// the error does not say otherwise. Here the INSERT commits and its answer
// is lost; then the key is recorded, and registering the replica fails.
func TestOpenFailingOnceTheKeyMayBeRecorded(t *testing.T) {
	dsn := pgtest.Database(t)
	key := storetest.Key()
	_, err := pgstore.Open(context.Background(), pgstore.Options{DSN: pgtest.LoseAnswer(t, dsn, "'kernel_key'"), Key: key})
	if err == nil || errors.Is(err, pgstore.ErrKeyNotRecorded) {
		t.Fatalf("the key's INSERT committed, its answer lost: %v, want an error not ErrKeyNotRecorded", err)
	}
	var stored string
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(context.Background(), "SELECT value FROM chio_meta WHERE key = 'kernel_key'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != key.Public().String() {
		t.Fatalf("the database holds %s, want the key whose answer was lost", stored)
	}

	exec(t, dsn, "DROP TABLE chio_replicas CASCADE")
	_, err = pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: key})
	if err == nil || errors.Is(err, pgstore.ErrKeyNotRecorded) {
		t.Fatalf("registering the replica failed: %v, want an error not ErrKeyNotRecorded", err)
	}
}

// Editing a stored receipt behind the kernel's back is caught: its proof is
// refused and the export does not verify; editing its leaf too stops the
// next start.
func TestTamperedDatabaseIsCaught(t *testing.T) {
	dsn := pgtest.Database(t)
	key := storetest.Key()
	open := func() (*pgstore.Store, *receipt.Log, error) {
		log := receipt.NewLog(key, receipt.LogOptions{Interval: time.Hour})
		s, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: key, Log: log})
		if err != nil {
			return nil, nil, err
		}
		if err := log.Start(context.Background(), s); err != nil {
			s.Close()
			return nil, nil, err
		}
		return s, log, nil
	}
	s, log, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := synth.Generate(context.Background(), s, key, synth.Config{Receipts: 200, Days: 1, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	for log.Size() < 200 {
		time.Sleep(5 * time.Millisecond)
	}
	log.Close(context.Background())
	s.Close()

	exec(t, dsn, `UPDATE chio_receipts SET raw = overlay(raw placing '9' from length(raw) - 3 for 1) WHERE seq = 43`)
	s, log, err = open()
	if err != nil {
		t.Fatal(err) // the leaves still match: only the receipt changed
	}
	var raw []byte
	s.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(43, 43, func(_ uint64, v []byte) bool { raw = bytes.Clone(v); return false })
	})
	_, cp, _ := log.Latest()
	if _, err := log.Prove(43, raw, cp); !errors.Is(err, receipt.ErrLogCorrupt) {
		t.Fatalf("proof of an edited receipt: %v", err)
	}
	var buf bytes.Buffer
	if err := s.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if rep, err := receipt.VerifyExport(&buf, receipt.VerifyOptions{KernelKey: key.Public()}); err == nil && rep.OK() {
		t.Fatal("an edited database verified")
	}
	log.Close(context.Background())
	s.Close()

	exec(t, dsn, `UPDATE chio_receipts SET leaf = sha256('\x00'::bytea || raw) WHERE seq = 43`)
	if _, _, err := open(); !errors.Is(err, receipt.ErrLogCorrupt) {
		t.Fatalf("start with an edited leaf: %v", err)
	}
}
