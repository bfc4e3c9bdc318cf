package pgstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// listPage reads one page of an ascending listing after cursor the way
// GET /v1/receipts does (limit, and one more to learn there are more), and
// returns its seqs and the next page's cursor (the page's last seq).
func listPage(t *testing.T, s *pgstore.Store, after uint64, limit int) ([]uint64, uint64) {
	t.Helper()
	var seqs []uint64
	err := s.QueryReceipts(receipt.Query{After: after}, func(seq uint64, _ []byte, _ *receipt.Receipt) bool {
		if len(seqs) == limit {
			return false
		}
		seqs = append(seqs, seq)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) > 0 {
		after = seqs[len(seqs)-1]
	}
	return seqs, after
}

// waitForLockIn waits until a backend of this database waits on a
// lock in a statement containing stmt, or done reports true.
func waitForLockIn(t *testing.T, c *pgx.Conn, stmt string, done func() bool) {
	t.Helper()
	eventually(t, "a statement waiting on a lock: "+stmt, func() bool {
		var n int
		err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`, stmt).Scan(&n)
		return err == nil && n > 0 || done()
	})
}

// An auditor pages through the log by cursor (the last seq of a page)
// while two replicas commit. Replica a has taken seq 4 and is held just
// before inserting its receipt; replica b commits meanwhile. Were b able
// to commit seq 5 first, a page could end at 5 and the next page, after
// the cursor 5, would never show 4: the listing silently incomplete. It
// cannot: seqs are taken under the lock of chio_log_head, held by a's
// transaction until it commits, so b waits for a and receipts become
// visible in seq order; the page taken meanwhile stops below 4, and the
// next one has 4 and 5. (A listing's end, the committed log head, is
// exact for the same reason: query.go's logEnd.)
func TestPagingSkipsNoReceiptCommittedLate(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	appendOne := func(s *pgstore.Store, id string) (*kernel.Appended, error) {
		var ap *kernel.Appended
		err := s.Update(context.Background(), func(tx kernel.Tx) error {
			ap = tx.AppendReceipt(&receipt.Receipt{ID: id, Timestamp: 1, Decision: receipt.Decision{Verdict: receipt.Allow}})
			return nil
		})
		return ap, err
	}
	for _, id := range []string{"rc-1", "rc-2", "rc-3"} {
		if _, err := appendOne(a, id); err != nil {
			t.Fatal(err)
		}
	}
	watcher, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(context.Background())
	// The holder inserts, uncommitted, a row with a's receipt id (at a
	// seq far away): a's commit then stops after taking its seq, when it
	// inserts its receipt and meets the unique id, until the holder rolls
	// back. Nothing else waits for the holder.
	holder, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	hold, err := holder.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(context.Background(), `INSERT INTO chio_receipts
		(seq, id, ts, verdict, guard, server, tool, subject, request_id, meta_keys, raw, leaf)
		VALUES (1000000, 'rc-a', 1, '', '', '', '', '', '', '{}', '', $1)`, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			if err := hold.Rollback(context.Background()); err != nil {
				t.Error(err)
			}
		}
	}
	defer release()

	type result struct {
		a   *kernel.Appended
		err error
	}
	doneA, doneB := make(chan result, 1), make(chan result, 1)
	go func() { ap, err := appendOne(a, "rc-a"); doneA <- result{ap, err} }()
	waitForLockIn(t, watcher, "INSERT INTO chio_receipts", func() bool { return false })
	go func() { ap, err := appendOne(b, "rc-b"); doneB <- result{ap, err} }()
	// b either waits for a (the head's lock) or has committed.
	var resB *result
	waitForLockIn(t, watcher, "chio_log_head", func() bool {
		select {
		case r := <-doneB:
			resB = &r
		default:
		}
		return resB != nil
	})

	first, cursor := listPage(t, a, 3, 100)
	release()
	resA := <-doneA
	if resB == nil {
		r := <-doneB
		resB = &r
	}
	if resA.err != nil || resB.err != nil {
		t.Fatalf("commits: a %v, b %v", resA.err, resB.err)
	}
	second, _ := listPage(t, a, cursor, 100)
	got := append(first, second...)
	want := []uint64{resA.a.Receipt.Seq, resB.a.Receipt.Seq}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("paging after seq 3 while a held seq %d and b committed seq %d: first page %v (cursor %d), next page %v; "+
			"want every receipt once: %v", resA.a.Receipt.Seq, resB.a.Receipt.Seq, first, cursor, second, want)
	}
	if resA.a.Receipt.Seq != 4 || len(first) != 0 {
		t.Fatalf("a took seq %d, the page taken while it was held showed %v: want seq 4 and nothing above 3 yet",
			resA.a.Receipt.Seq, first)
	}
}
