package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// Stats answer as of their start, like a listing: their counts and
// latencies are several statements, and a receipt committed between them
// (here: one with a far larger approval latency, and the group key) must
// count in none of them. Before, it was in the latencies but not in the
// total: latency averaged over receipts the total did not count, a
// metadata group's "" count short by one.
func TestStatsAsOfTheirStart(t *testing.T) {
	s, err := Open(context.Background(), Options{DSN: pgtest.Database(t), Key: storetest.Key()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	next := 1
	commit := func(latency int, meta bool) {
		t.Helper()
		r := &receipt.Receipt{ID: fmt.Sprintf("rc-%d", next), Timestamp: int64(next), Decision: receipt.Decision{Verdict: receipt.Allow},
			Metadata: map[string]any{receipt.LatencyKey: latency}}
		if meta {
			r.Metadata["approver"] = "k1"
		}
		next++
		if err := s.Update(context.Background(), func(tx kernel.Tx) error { tx.AppendReceipt(r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		commit(100+i, i%2 == 0)
	}
	for _, group := range []string{"", "decision", "metadata.approver"} {
		t.Run("group "+group, func(t *testing.T) {
			var last uint64
			if err := s.View(func(tx kernel.ReadTx) error { last = tx.LastSeq(); return nil }); err != nil {
				t.Fatal(err)
			}
			want, _ := receipt.NewStats(group)
			err := s.QueryReceipts(receipt.Query{Before: last + 1, Decode: true}, func(_ uint64, _ []byte, r *receipt.Receipt) bool {
				want.Add(r)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			fired := false
			s.beforeLatencies = func() {
				if !fired {
					fired = true
					commit(1_000_000, false) // committed while the stats run
				}
			}
			got, err := s.ReceiptStats(receipt.Filter{}, group)
			s.beforeLatencies = nil
			if err != nil || !fired {
				t.Fatalf("stats: %v (hook ran: %v)", err, fired)
			}
			if js(got) != js(want.Result()) {
				t.Fatalf("stats started with seqs 1..%d committed:\n got %s\nwant %s", last, js(got), js(want.Result()))
			}
		})
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }
