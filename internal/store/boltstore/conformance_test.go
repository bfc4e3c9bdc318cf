package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/receipt"
)

// The store conformance suite, shared with pgstore.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		New: func(t testing.TB) string { return filepath.Join(t.TempDir(), "chio.db") },
		Open: func(t testing.TB, loc string, key keys.PrivateKey, log *receipt.Log) (storetest.Store, error) {
			return boltstore.Open(loc, key, boltstore.Options{Log: log})
		},
		QueueCapacity:  boltstore.QueueCapacity,
		Committers:     1,
		ErrKeyMismatch: boltstore.ErrKeyMismatch,
	})
}
