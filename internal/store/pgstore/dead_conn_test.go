package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
)

// A commit that fails before its COMMIT is sent certainly did not commit,
// and must say so (kernel.ErrNotCommitted). The first commits on a pool
// whose connections' backends were killed (a database restart, a
// failover, an idle-timeout proxy) fail at their first statement; they
// were reported as failures that may be durable, so the kernel answered a
// call that never reached the database "outcome unknown" (it may have
// run: await it) where "unavailable" (nothing was decided: send it again)
// was true, and went looking for a decision that could not exist.
func TestCommitThatFailedBeforeCommitSaysNothingWasWritten(t *testing.T) {
	dsn := pgtest.Database(t)
	st := openPG(t, dsn)
	ctx := context.Background()
	killer, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	var failed []error
	for i := range 10 {
		// The pool holds connections (several at once); their backends die.
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = st.View(func(tx kernel.ReadTx) error { _, err := tx.Call("warm"); return err })
			}()
		}
		wg.Wait()
		if _, err := killer.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("req-%d", i)
		err := st.Update(ctx, func(tx kernel.Tx) error {
			if _, err := tx.Call(id); !errors.Is(err, kernel.ErrNotFound) {
				return err // the read meets the dead connection
			}
			return tx.PutCall(&kernel.CallRecord{RequestID: id, Status: kernel.StatusDispatching})
		})
		if err == nil {
			continue
		}
		var found bool
		if verr := st.View(func(tx kernel.ReadTx) error { _, err := tx.Call(id); found = err == nil; return nil }); verr != nil {
			t.Fatal(verr)
		}
		if !found && !errors.Is(err, kernel.ErrNotCommitted) {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d commit(s) that failed at a dead connection's first statement, and wrote nothing, were reported as maybe durable (no ErrNotCommitted); first: %v", len(failed), failed[0])
	}
}
