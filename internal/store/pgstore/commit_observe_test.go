package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
)

// Options.Observe feeds chiod's chio_commit_batch_size and
// chio_commit_seconds: store calls per group commit, and how long a
// commit took. bbolt reports each durable commit, counting the calls it
// made durable. pgstore reported every transaction it ran, whether it
// committed or not: with the database refusing every commit (here a newer
// build's schema), /metrics went on counting commits while nothing was
// durable, and a call whose own function failed counted as committed.
func TestObserveCountsOnlyCommittedCalls(t *testing.T) {
	dsn := pgtest.Database(t)
	var mu sync.Mutex
	var commits, calls int
	s, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: storetest.Key(), Lease: 2 * time.Second,
		Observe: func(batch int, _ time.Duration) { mu.Lock(); commits++; calls += batch; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	observed := func() (int, int) { mu.Lock(); defer mu.Unlock(); return commits, calls }
	put := func(id string) error {
		return s.Update(context.Background(), func(tx kernel.Tx) error {
			return tx.PutCall(&kernel.CallRecord{RequestID: id, Status: kernel.StatusAllowed})
		})
	}
	if err := put("committed"); err != nil {
		t.Fatal(err)
	}
	c0, n0 := observed()
	if c0 < 1 || n0 < 1 {
		t.Fatalf("setup: a commit that landed was not observed: %d commits, %d calls", c0, n0)
	}
	refused := errors.New("the function refuses")
	if err := s.Update(context.Background(), func(kernel.Tx) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("a failing function: %v", err)
	}
	if c, n := observed(); c != c0 || n != n0 {
		t.Errorf("a call whose function failed, committing nothing, was observed: %d commits, %d calls (before %d, %d)", c, n, c0, n0)
		c0, n0 = c, n
	}
	if err := migrateNewer(context.Background(), dsn); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"refused-1", "refused-2"} {
		if err := put(id); !errors.Is(err, kernel.ErrUnavailable) {
			t.Fatalf("a commit under a newer schema: %v", err)
		}
	}
	if c, n := observed(); c != c0 || n != n0 {
		t.Fatalf("commits the database refused were observed as commits: %d commits, %d calls (before %d, %d)", c, n, c0, n0)
	}
}
