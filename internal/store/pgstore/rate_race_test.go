package pgstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
)

// Hits of one key on replicas whose clocks read different seconds, made at
// the same moment, each count the others: max_calls_per_minute holds for
// all replicas together however their hits interleave. The window sum used
// to be read in the inserting statement's snapshot, taken before the hit's
// row lock was granted: a hit in flight on another second was invisible,
// and each of N simultaneous hits could see only itself (N calls allowed
// under max_calls_per_minute = 1).
//
// The interleaving is made deterministic: a third replica's hit at second
// s is held uncommitted; replica a's hit at s waits on its row; replica b
// hits at s+1; then the third commits.
func TestHitRateConcurrentHitsAcrossSecondsCountEachOther(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 900_000_000)
	key := "g\x00agent"
	third, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close(ctx)
	tx, err := third.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The third replica's hit, as HitRate makes it, not yet committed.
	if _, err := tx.Exec(ctx, `INSERT INTO chio_rate (key, sec, n) VALUES ($1, $2, 1)
		ON CONFLICT (key, sec) DO UPDATE SET n = chio_rate.n + 1`, []byte(key), now.Unix()); err != nil {
		t.Fatal(err)
	}
	type hit struct {
		n   int
		err error
	}
	ca, cb := make(chan hit, 1), make(chan hit, 1)
	go func() { n, err := a.HitRate(key, now); ca <- hit{n, err} }()
	waitForLockWaiter(t, third) // a's hit waits on the third's row
	go func() { n, err := b.HitRate(key, now.Add(200*time.Millisecond)); cb <- hit{n, err} }()
	// b either answers at once or waits its turn behind a.
	var hb *hit
	eventually(t, "replica b's hit answered or waiting", func() bool {
		select {
		case h := <-cb:
			hb = &h
			return true
		default:
		}
		var n int
		err := third.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n >= 2
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	ha := <-ca
	if hb == nil {
		h := <-cb
		hb = &h
	}
	if ha.err != nil || hb.err != nil {
		t.Fatalf("a: %v, b: %v", ha.err, hb.err)
	}
	got := []int{1, ha.n, hb.n} // the third's hit was the first
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("three simultaneous hits counted themselves %v (third 1, a %d, b %d), want 1, 2 and 3: "+
			"under max_calls_per_minute = %d all three calls pass", got, ha.n, hb.n, got[2])
	}
}
