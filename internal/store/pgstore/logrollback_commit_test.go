package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// openLogged opens a replica that feeds a Merkle log of its own.
func openLogged(t *testing.T, dsn string, key keys.PrivateKey) (*pgstore.Store, *receipt.Log) {
	t.Helper()
	log := receipt.NewLog(key, receipt.LogOptions{Interval: time.Hour})
	s, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: key, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := log.Start(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close(context.Background()) })
	return s, log
}

// commitReceipts commits n receipts in one transaction.
func commitReceipts(s *pgstore.Store, prefix string, n int) error {
	return s.Update(context.Background(), func(tx kernel.Tx) error {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("%s-%d", prefix, i)
			tx.AppendReceipt(&receipt.Receipt{ID: id, Timestamp: 1, RequestID: "req-" + id, Decision: receipt.Decision{Verdict: receipt.Allow}})
		}
		return nil
	})
}

func waitLog(t *testing.T, log *receipt.Log, n uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for log.Size() < n {
		if time.Now().After(deadline) {
			t.Fatalf("log holds %d receipts, want %d", log.Size(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A replica whose database's log head moved back (a failover to an
// asynchronous standby) must not commit receipts at the reused seqs: its
// tree holds other receipts at those seqs, so its very first commit after
// the move would fork the signed log. The commit is refused, certainly not
// committed, and nothing of it is stored. Replicas whose logs merely lag
// each other's commits are not refused.
func TestFirstCommitAfterTheLogMovedBackIsRefused(t *testing.T) {
	dsn := pgtest.Database(t)
	key := storetest.Key()
	a, logA := openLogged(t, dsn, key)
	b, _ := openLogged(t, dsn, key)
	if err := commitReceipts(a, "a", 20); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logA, 20)
	// The other replica commits; this one commits at once, its tree still
	// (perhaps) without the other's receipts: an honest lag, no fork.
	for i := 0; i < 5; i++ {
		if err := commitReceipts(b, fmt.Sprintf("b%d", i), 1); err != nil {
			t.Fatal(err)
		}
		if err := commitReceipts(a, fmt.Sprintf("a%d", i), 1); err != nil {
			t.Fatalf("a commit while this replica's log lags another's: %v", err)
		}
	}
	waitLog(t, logA, 30)

	// The database loses its last five receipts (a failover to a standby
	// that had not received them).
	exec(t, dsn, `BEGIN; DELETE FROM chio_receipts WHERE seq > 25; UPDATE chio_log_head SET last_seq = 25 WHERE id = 1; DELETE FROM chio_checkpoints; COMMIT`)
	err := commitReceipts(a, "after", 3)
	if !errors.Is(err, kernel.ErrUnavailable) || !errors.Is(err, kernel.ErrNotCommitted) {
		t.Fatalf("first commit after the database's log moved back from 30 to 25: %v; want refused, certainly not committed", err)
	}
	if n := countRows(t, dsn, "SELECT count(*) FROM chio_receipts WHERE seq > 25"); n != 0 {
		t.Fatalf("%d receipts stored at seqs this replica's signed tree holds others at", n)
	}
	if n := countRows(t, dsn, "SELECT last_seq::int FROM chio_log_head WHERE id = 1"); n != 25 {
		t.Fatalf("log head %d after the refused commit, want 25", n)
	}
	if err := a.Ready(); !errors.Is(err, receipt.ErrLogCorrupt) {
		t.Fatalf("Ready after the refused commit: %v, want ErrLogCorrupt", err)
	}
}

// Nor must such a replica store a checkpoint of its tree before it noticed:
// the database would then hold a signed checkpoint beyond its own head,
// over receipts it does not hold, and every replica would refuse to start
// on it.
func TestCheckpointAfterTheLogMovedBackIsNotStored(t *testing.T) {
	dsn := pgtest.Database(t)
	key := storetest.Key()
	a, logA := openLogged(t, dsn, key)
	if err := commitReceipts(a, "a", 20); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logA, 20)
	if _, cp, err := logA.Checkpoint(context.Background()); err != nil || cp.TreeSize != 20 {
		t.Fatalf("checkpoint before the rollback: %v %v", cp, err)
	}
	if err := commitReceipts(a, "b", 5); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logA, 25)

	// A standby that had received the receipts up to 22, and the
	// checkpoint of 20.
	exec(t, dsn, `BEGIN; DELETE FROM chio_receipts WHERE seq > 22; UPDATE chio_log_head SET last_seq = 22 WHERE id = 1; COMMIT`)
	if _, cp, err := logA.Checkpoint(context.Background()); err == nil {
		t.Fatalf("a checkpoint of %d receipts was stored in a database holding 22", cp.TreeSize)
	}
	if n := countRows(t, dsn, "SELECT count(*) FROM chio_checkpoints WHERE tree_size > 22"); n != 0 {
		t.Fatalf("%d checkpoints stored beyond the database's log head", n)
	}
	if err := a.Ready(); !errors.Is(err, receipt.ErrLogCorrupt) {
		t.Fatalf("Ready after the refused checkpoint: %v, want ErrLogCorrupt", err)
	}
	// A restart on the database as it now is starts.
	if _, log2 := openLogged(t, dsn, key); log2.Size() != 22 {
		t.Fatalf("restarted: log of %d, want 22", log2.Size())
	}
}
