package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// An acknowledged decision survives a database crash even where the
// operator turned synchronous_commit off (a common throughput tuning, set
// for the server, the database or the role). With it off, PostgreSQL
// answers COMMIT before the commit's WAL is flushed: Update returned, the
// kernel dispatched the call, and a crash then lost its allow decision
// and receipt — the request id free again (a second run of the call), the
// receipt's seq given to another receipt (every replica's Merkle log
// holding a leaf the database no longer has).
func TestAcknowledgedDecisionSurvivesCrashWithAsyncCommit(t *testing.T) {
	srv, err := pgtest.Start()
	if err != nil {
		pgtest.Unavailable(t, err)
	}
	t.Cleanup(srv.Stop)
	dsn, err := srv.CreateDatabase(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The operator's tuning; the WAL writer flushes a commit's record at
	// most this late (its longest delay), so a crash right after loses it.
	for _, sql := range []string{
		"ALTER DATABASE " + pgx.Identifier{admin.Config().Database}.Sanitize() + " SET synchronous_commit = off",
		"ALTER SYSTEM SET wal_writer_delay = '10s'",
		"SELECT pg_reload_conf()",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close(ctx)

	st := openPG(t, dsn)
	if err := st.Update(ctx, func(tx kernel.Tx) error {
		tx.AppendReceipt(&receipt.Receipt{ID: "rc-1", Timestamp: 1, RequestID: "req-1", Decision: receipt.Decision{Verdict: receipt.Allow}})
		return tx.PutCall(&kernel.CallRecord{RequestID: "req-1", Status: kernel.StatusDispatching, DecisionReceiptID: "rc-1", ReceiptID: "rc-1"})
	}); err != nil {
		t.Fatal(err)
	}
	// Acknowledged: the tool may be running now. The database crashes.
	srv.Crash()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}

	var found bool
	for i := 0; ; i++ { // the pool's connections were cut: the first reads may fail
		err = st.View(func(tx kernel.ReadTx) error {
			_, err := tx.Call("req-1")
			found = err == nil
			if errors.Is(err, kernel.ErrNotFound) {
				return nil
			}
			return err
		})
		if err == nil || i == 100 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatal("an allow decision whose commit Update acknowledged is gone after a database crash (synchronous_commit = off): its call may run again")
	}
}
