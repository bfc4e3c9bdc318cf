package boltstore_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
)

// Call records written as the allow path writes them — decided in one
// commit, settled (a little larger) in a later one, with request ids that
// ascend as the SDKs' UUIDv7 defaults do — end up on packed pages, not on
// the half-empty pages bbolt's default fill leaves (38% full before).
// Fewer, fuller pages are fewer pages written per commit.
var hex64 = strings.Repeat("c1", 32)

func TestAscendingCallRecordsArePacked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := boltstore.Open(path, testKey(), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id, status string) *kernel.CallRecord {
		c := &kernel.CallRecord{RequestID: id, Subject: "ed25519:" + hex64, CapabilityID: kernel.NewID("cap-"), Server: "demo",
			Tool: "echo", Action: "invoke", ParameterHash: hex64, Arguments: json.RawMessage(`{"hello":"world"}`),
			Status: status, ReceiptID: kernel.NewID("rc-"), DecisionReceiptID: kernel.NewID("rc-"), Delivery: "at_least_once"}
		if status == kernel.StatusAllowed {
			c.Execution, c.Attempts, c.Output = kernel.ExecutionSucceeded, 1, json.RawMessage(`{"ok":true}`)
		}
		return c
	}
	put := func(c *kernel.CallRecord, wg *sync.WaitGroup) {
		defer wg.Done()
		if err := s.Update(context.Background(), func(tx kernel.Tx) error { return tx.PutCall(c) }); err != nil {
			t.Error(err)
		}
	}
	// Rounds of 50 concurrent decisions, each round also settling the
	// previous round's calls, as group commit batches them.
	var prev []string
	for range 60 {
		var wg sync.WaitGroup
		var ids []string
		for range 50 {
			id := kernel.NewID("req-")
			ids = append(ids, id)
			wg.Add(1)
			go put(rec(id, kernel.StatusDispatching), &wg)
		}
		for _, id := range prev {
			wg.Add(1)
			go put(rec(id, kernel.StatusAllowed), &wg)
		}
		wg.Wait()
		prev = ids
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket([]byte("calls")).Stats()
		fill := float64(st.LeafInuse) / float64(st.LeafAlloc)
		if fill < 0.75 {
			t.Errorf("calls pages are %.0f%% full (%d records on %d pages); want ≥ 75%%", 100*fill, st.KeyN, st.LeafPageN)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
