package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A database whose log head moves back under a running replica (a
// failover to an asynchronous standby, a restore from a backup) no longer
// holds leaves the replica's tree holds. The replica must not go on
// signing checkpoints over a tree the database does not hold (a fork of
// the signed log): it stops committing and signing, and says why.
func TestLogHeadMovedBackFencesTheReplica(t *testing.T) {
	dsn := pgtest.Database(t)
	key := storetest.Key()
	log := receipt.NewLog(key, receipt.LogOptions{Interval: time.Hour})
	s, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: key, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := log.Start(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	defer log.Close(context.Background())
	if _, err := synth.Generate(context.Background(), s, key, synth.Config{Receipts: 20, Days: 1, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	for log.Size() < 20 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, cp, err := log.Checkpoint(context.Background()); err != nil || cp.TreeSize != 20 {
		t.Fatalf("checkpoint before the rollback: %v %v", cp, err)
	}

	// The database loses its last five receipts, in one transaction.
	exec(t, dsn, `BEGIN; DELETE FROM chio_receipts WHERE seq > 15; UPDATE chio_log_head SET last_seq = 15 WHERE id = 1; DELETE FROM chio_checkpoints; COMMIT`)
	// Receipts committed now would reuse seqs 16..20 with other contents:
	// the replica refuses them (its commit checks the tip inside its
	// transaction, or its follower noticed first), and none is stored.
	want := uint64(15)
	if _, err := synth.Generate(context.Background(), s, key, synth.Config{Receipts: 8, Days: 1, Seed: 5}); !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("commit after the database's log head moved back: %v, want ErrUnavailable", err)
	}

	// The replica notices (its next feed or follow) and turns unready.
	deadline := time.Now().Add(10 * pgstore.FollowInterval)
	for s.Ready() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ready := s.Ready()
	if ready == nil || !errors.Is(ready, receipt.ErrLogCorrupt) || !strings.Contains(ready.Error(), "20") ||
		!strings.Contains(ready.Error(), "15") {
		t.Fatalf("Ready after the database's log head moved back from 20 to 15: %v; want ErrLogCorrupt naming both heads", ready)
	}
	// It signs no checkpoint over the tree the database does not hold...
	if _, cp, err := log.Checkpoint(context.Background()); err == nil && cp.TreeSize != 20 {
		t.Fatalf("a checkpoint of %d receipts was signed over a forked tree", cp.TreeSize)
	}
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var stored int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM chio_checkpoints").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Fatalf("%d checkpoints stored after the rollback, want none", stored)
	}
	// ... and commits nothing more.
	err = s.Update(context.Background(), func(tx kernel.Tx) error { return nil })
	if !errors.Is(err, kernel.ErrUnavailable) {
		t.Fatalf("Update on a replica whose tree the database no longer holds: %v, want ErrUnavailable", err)
	}
	log.Close(context.Background())
	s.Close()

	// A restart loads the log as the database now holds it.
	log2 := receipt.NewLog(key, receipt.LogOptions{Interval: time.Hour})
	s2, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: key, Log: log2})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := log2.Start(context.Background(), s2); err != nil {
		t.Fatal(err)
	}
	defer log2.Close(context.Background())
	if log2.Size() != want || s2.Ready() != nil {
		t.Fatalf("restarted: log of %d, ready %v; want %d and ready", log2.Size(), s2.Ready(), want)
	}
}
