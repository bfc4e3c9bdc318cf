package boltstore_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// chunkSettings are the read-transaction sizes the chunked scans are
// compared under; "one transaction" is the oracle, a whole scan per read.
var chunkSettings = []struct {
	name                  string
	entries, first, bytes int
}{
	{"one transaction", math.MaxInt, math.MaxInt, math.MaxInt},
	{"default", 0, 0, 0},
	{"one entry", 1, 1, math.MaxInt},
	{"7 entries, 3 first", 7, 3, math.MaxInt},
	{"2 candidates first", math.MaxInt, 2, math.MaxInt},
	{"one receipt by bytes", math.MaxInt, math.MaxInt, 1},
}

// hit is one match as a caller sees it.
type hit struct {
	seq     uint64
	raw     string
	decoded bool
}

func queryHits(t *testing.T, s *boltstore.Store, q receipt.Query, stopAt int) []hit {
	t.Helper()
	var out []hit
	err := s.QueryReceipts(q, func(seq uint64, raw []byte, r *receipt.Receipt) bool {
		if r != nil && r.Seq != seq {
			t.Fatalf("query %+v: decoded receipt %d for seq %d", q, r.Seq, seq)
		}
		out = append(out, hit{seq, string(raw), r != nil})
		return len(out) != stopAt
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pages lists q as GET /v1/receipts pages it: limit matches a page, the
// next page from the last seq shown (after it ascending, before it
// descending) until a page is short.
func pages(t *testing.T, s *boltstore.Store, q receipt.Query, limit int) []uint64 {
	t.Helper()
	var out []uint64
	for {
		page := queryHits(t, s, q, limit+1)
		for _, h := range page[:min(len(page), limit)] {
			out = append(out, h.seq)
		}
		if len(page) <= limit {
			return out
		}
		if q.Desc {
			q.Before = page[limit-1].seq
		} else {
			q.After = page[limit-1].seq
		}
	}
}

// A log that spans many chunks answers every query shape the store tests
// cover (storetest.RandomQuery) and every stats shape (StatsFilters ×
// StatsGroups, with values too long to index) exactly as one read
// transaction did: the same receipts, bytes and decoding, in the same
// order, stopping where the caller stops, and paging by cursor alike.
func TestChunkedQueriesEqualOneTransaction(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "chio.db"), testKey(), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(17, 18))
	storetest.RandomLog(t, s, 1500, rng)
	// Values too long to index, which stats decode from ix_long.
	long := strings.Repeat("t", boltstore.MaxIndexedValue+1)
	for i := range 40 {
		r := &receipt.Receipt{ID: fmt.Sprintf("rc-long-%d", i), RequestID: "req-long", Subject: "ed25519:aa", ToolServer: "db",
			ToolName: long + fmt.Sprint(i%3), Action: "invoke", Timestamp: 1_700_000_000_000 + int64(i)*60_000,
			Decision: receipt.Decision{Verdict: receipt.Allow}, Metadata: map[string]any{"approval_latency_ms": i * 100}}
		if i%4 == 0 {
			r.Subject = "ed25519:" + long
		}
		if err := s.Update(context.Background(), func(tx kernel.Tx) error { tx.AppendReceipt(r); return nil }); err != nil {
			t.Fatal(err)
		}
		storetest.RandomLog(t, s, 20, rng)
	}
	all := storetest.AllStored(t, s)

	type answer struct {
		full, first3 []hit
		pages        []uint64
	}
	queries := make([]receipt.Query, 100)
	for i := range queries {
		queries[i] = storetest.RandomQuery(rng, all)
	}
	stats := func() []string {
		var out []string
		for _, f := range storetest.StatsFilters(all) {
			for _, g := range storetest.StatsGroups {
				res, err := s.ReceiptStats(f, g)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, js(res))
			}
		}
		return out
	}
	var wantQueries []answer
	var wantStats []string
	for _, c := range chunkSettings {
		t.Run(c.name, func(t *testing.T) {
			if c.entries > 0 {
				defer boltstore.SetQueryChunkForTest(c.entries, c.first, c.bytes)()
			}
			var got []answer
			for i, q := range queries {
				a := answer{full: queryHits(t, s, q, 0), first3: queryHits(t, s, q, 3)}
				if i%8 == 0 {
					a.pages = pages(t, s, q, 97)
				}
				got = append(got, a)
			}
			gotStats := stats()
			if wantQueries == nil { // the oracle: check it against a full scan
				for i, q := range queries {
					var want []uint64
					for _, st := range all {
						if st.Seq > q.After && (q.Before == 0 || st.Seq < q.Before) && q.Filter.Match(st.RC) {
							want = append(want, st.Seq)
						}
					}
					if q.Desc {
						slices.Reverse(want)
					}
					var seqs []uint64
					for _, h := range got[i].full {
						seqs = append(seqs, h.seq)
					}
					if !slices.Equal(seqs, want) {
						t.Fatalf("query %+v in one transaction: %d matches, a full scan %d", q, len(seqs), len(want))
					}
				}
				wantQueries, wantStats = got, gotStats
				return
			}
			for i, q := range queries {
				w, g := wantQueries[i], got[i]
				if !slices.Equal(g.full, w.full) || !slices.Equal(g.first3, w.first3) || !slices.Equal(g.pages, w.pages) {
					t.Fatalf("query %+v: chunked %d matches (first 3 %d, pages %d), one transaction %d (%d, %d)",
						q, len(g.full), len(g.first3), len(g.pages), len(w.full), len(w.first3), len(w.pages))
				}
			}
			if !slices.Equal(gotStats, wantStats) {
				for i := range gotStats {
					if gotStats[i] != wantStats[i] {
						t.Fatalf("stats %d differ:\n got %s\nwant %s", i, gotStats[i], wantStats[i])
					}
				}
			}
		})
	}
}
