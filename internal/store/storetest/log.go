package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/receipt"
)

// The store feeds the Merkle log, checkpoints survive a restart (which
// checks the stored leaves against the latest signed head), and the export
// of a realistic log (every chain kind, batches) verifies offline.
func testLogCheckpointsAndExport(t *testing.T, b Backend) {
	loc := b.New(t)
	open := func() (Store, *receipt.Log) {
		log := receipt.NewLog(Key(), receipt.LogOptions{Every: 500, Interval: time.Hour})
		s := reopen(t, b, loc, log)
		if err := log.Start(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return s, log
	}
	s, log := open()
	sum, err := synth.Generate(context.Background(), s, Key(), synth.Config{Receipts: 3000, Days: 2, Seed: 3, Batch: 250})
	if err != nil {
		t.Fatal(err)
	}
	waitSize(t, log, 3000)
	if sum.HumanApproved == 0 || sum.HumanDenied == 0 || sum.AutoApproved == 0 || sum.Batched == 0 {
		t.Fatalf("generated %+v", sum)
	}
	log.Close(context.Background())
	s.Close()

	s, log = open()
	defer log.Close(context.Background())
	n := 0
	s.Checkpoints(0, func(uint64, []byte) bool { n++; return true })
	if _, cp, _ := log.Latest(); cp.TreeSize != 3000 || n < 3 {
		t.Fatalf("latest %d, %d checkpoints stored", cp.TreeSize, n)
	}
	raw, err := s.LatestCheckpoint()
	if err != nil || raw == nil {
		t.Fatalf("latest stored checkpoint: %v", err)
	}
	var buf bytes.Buffer
	if err := s.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	rep, err := receipt.VerifyExport(bytes.NewReader(buf.Bytes()), receipt.VerifyOptions{KernelKey: Key().Public()})
	if err != nil || !rep.OK() {
		t.Fatalf("%v %+v", err, rep.Problems)
	}
	if rep.Receipts != 3000 || rep.Chains == 0 || rep.Tokens == 0 || rep.BatchTokens == 0 || rep.Pending != sum.Pending {
		t.Fatalf("report %+v (generated %+v)", rep, sum)
	}
	// Every stored receipt has an inclusion proof against the latest head.
	_, cp, _ := log.Latest()
	for _, st := range AllStored(t, s)[:50] {
		var stored []byte
		s.QueryReceipts(receipt.Query{After: st.Seq - 1, Before: st.Seq + 1}, func(_ uint64, raw []byte, _ *receipt.Receipt) bool {
			stored = bytes.Clone(raw)
			return false
		})
		if _, err := log.Prove(st.Seq, stored, cp); err != nil {
			t.Fatalf("proof of seq %d: %v", st.Seq, err)
		}
	}
}

// waitSize waits for the log to hold n leaves: a store may feed its log a
// moment after answering the commit.
func waitSize(t testing.TB, log *receipt.Log, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for log.Size() < n {
		if time.Now().After(deadline) {
			t.Fatalf("log holds %d leaves, want %d", log.Size(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if log.Size() != n {
		t.Fatalf("log holds %d leaves, want %d", log.Size(), n)
	}
}
