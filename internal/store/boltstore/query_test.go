package boltstore_test

// Store-contract tests (queries, stats, group commit, records) are in
// internal/store/storetest and run from conformance_test.go; these reach
// into bbolt's own buckets.

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/receipt"
)

func testKey() keys.PrivateKey { return storetest.Key() }

func open(t testing.TB, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, testKey(), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A store written before the indexes existed is indexed when opened.
func TestOpenIndexesAnOlderStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s := open(t, path)
	storetest.RandomLog(t, s, 500, rand.New(rand.NewPCG(3, 4)))
	want := storetest.AllStored(t, s)
	s.Close()
	// Strip every index (and some leaves), as an older build left them.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(btx *bolt.Tx) error {
		for _, b := range boltstore.IndexBucketsForTest {
			btx.DeleteBucket(b)
			btx.CreateBucket(b)
		}
		c := btx.Bucket(boltstore.BucketLeavesForTest).Cursor()
		for k, _ := c.Seek(boltstore.SeqKeyForTest(400)); k != nil; k, _ = c.Seek(boltstore.SeqKeyForTest(400)) {
			c.Delete()
		}
		return nil
	})
	db.Close()
	log := receipt.NewLog(testKey(), receipt.LogOptions{})
	s, err = boltstore.Open(path, testKey(), boltstore.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if log.Size() != 500 {
		t.Fatalf("log size %d", log.Size())
	}
	var got int
	s.QueryReceipts(receipt.Query{Filter: receipt.Filter{Decision: "deny"}}, func(uint64, []byte, *receipt.Receipt) bool { got++; return true })
	n := 0
	for _, st := range want {
		if st.RC.Decision.Verdict == "deny" {
			n++
		}
	}
	if got != n || n == 0 {
		t.Fatalf("deny after reindex: %d, want %d", got, n)
	}
}

// A hole in the leaves (a receipt lost) refuses to open with a log.
func TestOpenRefusesLeafHole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hole.db")
	s := open(t, path)
	storetest.RandomLog(t, s, 20, rand.New(rand.NewPCG(5, 6)))
	s.Close()
	db, _ := bolt.Open(path, 0o600, nil)
	db.Update(func(btx *bolt.Tx) error {
		return btx.Bucket(boltstore.BucketLeavesForTest).Delete(boltstore.SeqKeyForTest(7))
	})
	db.Close()
	if _, err := boltstore.Open(path, testKey(), boltstore.Options{Log: receipt.NewLog(testKey(), receipt.LogOptions{})}); err == nil || !strings.Contains(err.Error(), "receipt log corrupt") {
		t.Fatalf("open with a leaf hole: %v", err)
	}
}
