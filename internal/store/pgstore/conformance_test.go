package pgstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/receipt"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// backend opens pgstores on fresh databases of this binary's PostgreSQL.
func backend() storetest.Backend {
	return storetest.Backend{
		New: func(t testing.TB) string { return pgtest.Database(t) },
		Open: func(t testing.TB, dsn string, key keys.PrivateKey, log *receipt.Log) (storetest.Store, error) {
			return pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: key, Log: log})
		},
		QueueCapacity:  pgstore.QueueCapacity,
		Committers:     pgstore.DefaultCommitters,
		Replicas:       true,
		ErrKeyMismatch: pgstore.ErrKeyMismatch,
	}
}

// The store conformance suite, shared with boltstore, plus its
// cross-replica cases.
func TestConformance(t *testing.T) { storetest.Run(t, backend()) }
