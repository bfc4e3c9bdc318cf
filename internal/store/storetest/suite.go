// Package storetest is the one conformance suite every kernel.Store passes:
// boltstore (the embedded default) and pgstore (replicas on PostgreSQL).
// What the kernel relies on is tested here once, against each backend:
// group commit (a failing function fails alone, callers are answered only
// once their commit is durable, a full queue fails closed), receipts (seq,
// append, signature, lookups), calls and the dispatching index, approvals
// and their pending order, consumed tokens (exactly one of many concurrent
// presentations), standing approvals (and the live ones the allow path
// reads) and counters (no lost update under
// concurrency), revocations, audit queries and stats against a full scan,
// and the Merkle log with checkpoints and the offline export; a store opened
// under another kernel key than the one that created it is refused. A backend
// that several replicas share at once also runs the cross-replica cases.
//
// A backend's test calls Run with a Backend. This package imports no store.
package storetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// Store is what the suite exercises: the kernel's store plus the audit
// interfaces chiod serves from it.
type Store interface {
	kernel.Store
	receipt.Index
	receipt.StatsIndex
	receipt.Exporter
	receipt.CheckpointStore
}

// Backend opens stores of one implementation.
type Backend struct {
	// New returns a fresh, empty location (a file path, a DSN).
	New func(t testing.TB) string
	// Open opens the store at loc, signing with key and feeding log (nil:
	// none). It is called again for the same loc after Close.
	Open func(t testing.TB, loc string, key keys.PrivateKey, log *receipt.Log) (Store, error)
	// QueueCapacity is the bound of the commit queue; Committers is how many
	// functions the store runs at once (so that many blocking functions
	// hold it entirely).
	QueueCapacity, Committers int
	// Replicas: loc may be open several times at once (replicas of one
	// database); the cross-replica cases run.
	Replicas bool
	// ErrKeyMismatch is the error Open returns (errors.Is) for a store
	// created under another kernel key.
	ErrKeyMismatch error
}

// Run runs the whole suite.
func Run(t *testing.T, b Backend) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"ContiguousSignedSeqs", testContiguousSignedSeqs},
		{"FailingFunctionsFailAlone", testFailingFunctionsFailAlone},
		{"UnsignableReceiptFailsAlone", testUnsignableReceiptFailsAlone},
		{"ReopenKeepsEverything", testReopenKeepsEverything},
		{"RefusesAnotherKernelKey", testRefusesAnotherKernelKey},
		{"CloseDrainsQueue", testCloseDrainsQueue},
		{"FullQueueFailsClosed", testFullQueueFailsClosed},
		{"CallsAndDispatchingIndex", testCallsAndDispatching},
		{"RecordsKeepRawBytes", testRecordsKeepRawBytes},
		{"FreshRecordOnce", testFreshRecordOnce},
		{"ApprovalsPendingOrder", testApprovalsPendingOrder},
		{"ConsumeExactlyOnce", testConsumeExactlyOnce},
		{"CountersNoLostUpdate", testCountersNoLostUpdate},
		{"BatchesNoLostUpdate", testBatchesNoLostUpdate},
		{"LiveBatches", testLiveBatches},
		{"Revocations", testRevocations},
		{"QueryMatchesFullScan", testQueryMatchesFullScan},
		{"MetaKeyFilters", testMetaKeyFilters},
		{"StatsMatchFullScan", testStatsMatchFullScan},
		{"ListingAsOfItsStart", testListingAsOfItsStart},
		{"LogCheckpointsAndExport", testLogCheckpointsAndExport},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
	}
	if b.Replicas {
		t.Run("Replicas", func(t *testing.T) { runReplicas(t, b) })
	}
}

// Key is the suite's kernel key.
func Key() keys.PrivateKey { return keys.FromSeed(bytes.Repeat([]byte{7}, 32)) }

// open opens a fresh store and closes it when the test ends.
func open(t testing.TB, b Backend) (Store, string) {
	t.Helper()
	loc := b.New(t)
	return reopen(t, b, loc, nil), loc
}

func reopen(t testing.TB, b Backend, loc string, log *receipt.Log) Store {
	t.Helper()
	s, err := b.Open(t, loc, Key(), log)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	return closing{Store: s, closed: &closed}
}

// closing remembers that a test closed its store.
type closing struct {
	Store
	closed *bool
}

func (c closing) Close() error { *c.closed = true; return c.Store.Close() }

func update(t testing.TB, s Store, fn func(kernel.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}
