package boltstore_test

// The audit index trails the receipts by up to IndexLag (index.go,
// "Batched indexing"); these tests hold readers, restarts and crashes to
// seeing every committed receipt anyway.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// appendN commits n allow receipts for tool, one commit each.
func appendN(t testing.TB, s *boltstore.Store, tool string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		err := s.Update(context.Background(), func(tx kernel.Tx) error {
			tx.AppendReceipt(&receipt.Receipt{ID: fmt.Sprintf("rc-%s-%d", tool, i), RequestID: "r", Subject: "ed25519:aa",
				ToolServer: "demo", ToolName: tool, Action: "invoke", Timestamp: 1_700_000_000_000 + int64(i),
				Decision: receipt.Decision{Verdict: receipt.Allow}, Metadata: map[string]any{}})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func count(t testing.TB, s *boltstore.Store, f receipt.Filter) int {
	t.Helper()
	n := 0
	if err := s.QueryReceipts(receipt.Query{Filter: f}, func(uint64, []byte, *receipt.Receipt) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	return n
}

// Commits leave the index behind until IndexLag receipts wait; a query
// still sees every receipt committed before it, by catching the index up.
func TestIndexTrailsButReadersSeeEverything(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "lag.db"))
	defer s.Close()
	appendN(t, s, "a", 10)
	if got := boltstore.IndexedThroughForTest(s); got != 0 {
		t.Fatalf("index through %d after 10 single-receipt commits; want it trailing at 0", got)
	}
	if n := count(t, s, receipt.Filter{Tool: "a"}); n != 10 {
		t.Fatalf("query sees %d of 10 receipts", n)
	}
	if got := boltstore.IndexedThroughForTest(s); got != 10 {
		t.Fatalf("index through %d after a query; want 10", got)
	}
	// Stats and a query after more commits: read-your-writes again.
	appendN(t, s, "b", 7)
	st, err := s.ReceiptStats(receipt.Filter{}, "tool_name")
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]uint64{}
	for _, g := range st.Groups {
		groups[g.Key] = g.Count
	}
	if st.Total != 17 || groups["a"] != 10 || groups["b"] != 7 {
		t.Fatalf("stats over a trailing index: total %d groups %v", st.Total, groups)
	}
	// Without readers, the commit that finds IndexLag waiting indexes them.
	appendN(t, s, "c", boltstore.IndexLag)
	if got, want := boltstore.IndexedThroughForTest(s), uint64(17+boltstore.IndexLag); got != want {
		t.Fatalf("index through %d after %d receipts waited; want %d", got, boltstore.IndexLag, want)
	}
}

// Close leaves the index whole, so the next Open has nothing to catch up.
func TestCloseIndexesTheRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "close.db")
	s := open(t, path)
	appendN(t, s, "a", 5)
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(btx *bolt.Tx) error {
		v := btx.Bucket([]byte("ix_meta")).Get([]byte("through"))
		if !bytes.Equal(v, boltstore.SeqKeyForTest(5)) {
			t.Fatalf("through after Close = %x, want seq 5", v)
		}
		return nil
	})
}

// crashCopy is the store's file as a crash would leave it: every commit
// so far is in the file (bbolt writes before it acknowledges), Close never
// ran.
func crashCopy(t testing.TB, s *boltstore.Store, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	if err := os.WriteFile(crashed, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return crashed
}

// alter changes a closed store's file behind the store's back.
func alter(t testing.TB, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// crashedAltered commits n receipts for tool "a" (unindexed: n <
// IndexLag), leaves the file as a crash would, and changes it with fn.
func crashedAltered(t testing.TB, n int, fn func(*bolt.Tx) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "live.db")
	s := open(t, path)
	t.Cleanup(func() { s.Close() })
	appendN(t, s, "a", n)
	crashed := crashCopy(t, s, path)
	alter(t, crashed, fn)
	return crashed
}

// After a crash, Open indexes what the index had not reached yet.
func TestOpenAfterCrashIndexesTheTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.db")
	s := open(t, path)
	defer s.Close()
	storetest.RandomLog(t, s, 300, rand.New(rand.NewPCG(8, 9)))
	want := storetest.AllStored(t, s)
	if got := boltstore.IndexedThroughForTest(s); got >= uint64(len(want)) {
		t.Fatalf("index through %d of %d: the test needs a trailing index", got, len(want))
	}
	c := open(t, crashCopy(t, s, path))
	defer c.Close()
	if got := boltstore.IndexedThroughForTest(c); got != uint64(len(want)) {
		t.Fatalf("index through %d after reopening, want %d", got, len(want))
	}
	n := 0
	for _, st := range want {
		if st.RC.Decision.Verdict == receipt.Deny {
			n++
		}
	}
	if got := count(t, c, receipt.Filter{Decision: receipt.Deny}); got != n || n == 0 {
		t.Fatalf("deny receipts after the crash: %d, want %d", got, n)
	}
}

// A stored receipt altered while unindexed does not keep the store from
// opening (verify reports it); the others are indexed.
func TestOpenAfterCrashSkipsAnUndecodableReceipt(t *testing.T) {
	crashed := crashedAltered(t, 6, func(btx *bolt.Tx) error {
		return btx.Bucket([]byte("receipts")).Put(boltstore.SeqKeyForTest(3), []byte(`{"x":1}`))
	})
	c := open(t, crashed)
	defer c.Close()
	if got := count(t, c, receipt.Filter{Tool: "a"}); got != 5 {
		t.Fatalf("after a tampered unindexed receipt: %d indexed, want the 5 others", got)
	}
}

// A leaf deleted from the middle of the unindexed tail is still a hole
// that refuses to open, not a leaf recomputed from the (possibly
// altered) receipt.
func TestOpenAfterCrashRefusesALeafHole(t *testing.T) {
	crashed := crashedAltered(t, 20, func(btx *bolt.Tx) error {
		return btx.Bucket(boltstore.BucketLeavesForTest).Delete(boltstore.SeqKeyForTest(7))
	})
	_, err := boltstore.Open(crashed, testKey(), boltstore.Options{Log: receipt.NewLog(testKey(), receipt.LogOptions{})})
	if err == nil || !strings.Contains(err.Error(), "receipt log corrupt") {
		t.Fatalf("open with a leaf hole in the unindexed tail: %v", err)
	}
}
