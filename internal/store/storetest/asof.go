package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A listing answers as of its start: every receipt committed before the
// call, none committed while it runs, whichever the direction, the filter
// (indexed, decoded, a time window) or how many reads the store splits it
// into. An auditor's page is a consistent cut of the log, and its cursor
// (the page's last seq) is where the next page picks up what came after.
func testListingAsOfItsStart(t *testing.T, b Backend) {
	s, _ := open(t, b)
	const n = 700 // several of every store's reads
	next := 1
	commit := func(k int) {
		t.Helper()
		update(t, s, func(tx kernel.Tx) error {
			for range k {
				tx.AppendReceipt(newReceipt(next))
				next++
			}
			return nil
		})
	}
	for range n / 100 {
		commit(100)
	}
	for _, c := range []struct {
		name string
		q    receipt.Query
	}{
		{"asc", receipt.Query{}},
		{"desc", receipt.Query{Desc: true}},
		{"asc indexed filter", receipt.Query{Filter: receipt.Filter{Decision: receipt.Allow}}},
		{"asc decoded filter", receipt.Query{Filter: receipt.Filter{Decision: receipt.Allow}, Decode: true}},
		{"asc time window", receipt.Query{Filter: receipt.Filter{Since: 1, Until: 1 << 40}}},
		{"asc after a cursor", receipt.Query{After: 50}},
		{"desc before a cursor", receipt.Query{Desc: true, Before: 600}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var last uint64
			if err := s.View(func(tx kernel.ReadTx) error { last = tx.LastSeq(); return nil }); err != nil {
				t.Fatal(err)
			}
			var want []uint64
			for seq := uint64(1); seq <= last; seq++ {
				if seq > c.q.After && (c.q.Before == 0 || seq < c.q.Before) {
					want = append(want, seq)
				}
			}
			if c.q.Desc {
				slices.Reverse(want)
			}
			var got []uint64
			err := s.QueryReceipts(c.q, func(seq uint64, _ []byte, _ *receipt.Receipt) bool {
				if len(got) == 0 {
					commit(5) // committed (and acknowledged) while the listing runs
				}
				got = append(got, seq)
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("listing started with seqs 1..%d committed:\n got %d %s\nwant %d %s",
					last, len(got), ends(got), len(want), ends(want))
			}
		})
	}
}

// ends shows a list of seqs by its ends.
func ends(xs []uint64) string {
	if len(xs) <= 6 {
		return fmt.Sprint(xs)
	}
	return fmt.Sprint(xs[:3], "…", xs[len(xs)-3:])
}
