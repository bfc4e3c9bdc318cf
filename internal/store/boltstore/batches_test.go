package boltstore_test

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/receipt"
)

// A store written before the live-batch index (no batches_live bucket)
// builds it at its first open.
func TestLiveBatchIndexBuiltOnUpgrade(t *testing.T) {
	storetest.LiveBatchesAfterUpgrade(t, storetest.Backend{
		New: func(t testing.TB) string { return filepath.Join(t.TempDir(), "chio.db") },
		Open: func(t testing.TB, loc string, key keys.PrivateKey, log *receipt.Log) (storetest.Store, error) {
			return boltstore.Open(loc, key, boltstore.Options{Log: log})
		},
	}, func(t *testing.T, loc string) {
		db, err := bolt.Open(loc, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("batches_live")) }); err != nil {
			t.Fatal(err)
		}
	})
}
