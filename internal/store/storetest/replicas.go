package storetest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// runReplicas is the cross-replica part of the suite: several handles on
// one location behave as one store and keep one log. (Tokens, counters,
// batches and fresh records are raced across replicas by the main cases.)
func runReplicas(t *testing.T, b Backend) {
	t.Run("OneLog", func(t *testing.T) { testOneLog(t, b) })
}

// Receipts committed concurrently through three replicas get seqs 1..n once
// each; every replica's Merkle log holds all of them in the same order,
// their checkpoints agree, and the export verifies.
func testOneLog(t *testing.T, b Backend) {
	loc := b.New(t)
	const replicas, each = 3, 200
	var stores []Store
	var logs []*receipt.Log
	for i := 0; i < replicas; i++ {
		log := receipt.NewLog(Key(), receipt.LogOptions{Every: 97, Interval: 50 * time.Millisecond})
		s := reopen(t, b, loc, log)
		if err := log.Start(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close(context.Background()) })
		stores, logs = append(stores, s), append(logs, log)
	}
	var mu sync.Mutex
	seqs := map[uint64]string{}
	var wg sync.WaitGroup
	for r := 0; r < replicas; r++ {
		for i := 0; i < each; i++ {
			wg.Add(1)
			go func(r, i int) {
				defer wg.Done()
				var a *kernel.Appended
				err := stores[r].Update(context.Background(), func(tx kernel.Tx) error {
					a = tx.AppendReceipt(newReceipt(r*each + i))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if prev, dup := seqs[a.Receipt.Seq]; dup {
					t.Errorf("seq %d given to %s and %s", a.Receipt.Seq, prev, a.Receipt.ID)
				}
				seqs[a.Receipt.Seq] = a.Receipt.ID
			}(r, i)
		}
	}
	wg.Wait()
	n := uint64(replicas * each)
	for q := uint64(1); q <= n; q++ {
		if _, ok := seqs[q]; !ok {
			t.Fatalf("seq %d missing: the log has a gap", q)
		}
	}
	var roots [][]byte
	for i, log := range logs {
		waitSize(t, log, n)
		raw, cp, err := log.Checkpoint(context.Background())
		if err != nil {
			t.Fatalf("replica %d checkpoint: %v", i, err)
		}
		if cp.TreeSize != n {
			t.Fatalf("replica %d checkpoint of %d", i, cp.TreeSize)
		}
		if _, err := receipt.VerifyCheckpoint(raw, Key().Public()); err != nil {
			t.Fatal(err)
		}
		roots = append(roots, []byte(cp.RootHash))
	}
	for i := 1; i < len(roots); i++ {
		if !bytes.Equal(roots[i], roots[0]) {
			t.Fatalf("replica %d's root %s differs from replica 0's %s", i, roots[i], roots[0])
		}
	}
	// Proofs from any replica's log verify for a receipt another appended.
	_, cp, _ := logs[2].Latest()
	all := AllStored(t, stores[0])
	for _, st := range []Stored{all[0], all[len(all)/2], all[len(all)-1]} {
		var raw []byte
		stores[1].View(func(tx kernel.ReadTx) error {
			raw, _ = tx.Receipt(st.RC.ID)
			return nil
		})
		if _, err := logs[2].Prove(st.Seq, raw, cp); err != nil {
			t.Fatalf("seq %d: %v", st.Seq, err)
		}
	}
	var buf bytes.Buffer
	if err := stores[1].Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	rep, err := receipt.VerifyExport(&buf, receipt.VerifyOptions{KernelKey: Key().Public()})
	if err != nil || !rep.OK() || rep.Receipts != n {
		t.Fatalf("export: %v %+v", err, rep)
	}
	// Checkpoints stored by every replica are all of one tree.
	sizes := 0
	err = stores[0].Checkpoints(0, func(size uint64, raw []byte) bool {
		sizes++
		cp, err := receipt.VerifyCheckpoint(raw, Key().Public())
		if err != nil {
			t.Errorf("checkpoint %d: %v", size, err)
			return false
		}
		if cp.TreeSize != size {
			t.Errorf("checkpoint stored under %d is of %d", size, cp.TreeSize)
		}
		return true
	})
	if err != nil || sizes == 0 {
		t.Fatalf("checkpoints: %d, %v", sizes, err)
	}
}
