package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// RandomLog commits n receipts with a mix of every indexed attribute and
// timestamps that are only nearly increasing, in commits of random size.
func RandomLog(t testing.TB, s kernel.Store, n int, rng *rand.Rand) {
	t.Helper()
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	ts := int64(1_700_000_000_000)
	for i := 0; i < n; {
		batch := 1 + rng.IntN(200)
		err := s.Update(context.Background(), func(tx kernel.Tx) error {
			for j := 0; j < batch && i+j < n; j++ {
				ts += int64(rng.IntN(60_000))
				r := &receipt.Receipt{ID: fmt.Sprintf("rc-%d", i+j), RequestID: fmt.Sprintf("req-%d", rng.IntN(n/2+1)),
					Timestamp:  ts - int64(rng.IntN(120_000)), // out of seq order by up to 2 minutes
					ToolServer: pick("payments", "github", "db"), ToolName: pick("refund", "issue", "query", "x"),
					Subject: pick("ed25519:aa", "ed25519:bb", "ed25519:cc"), Metadata: map[string]any{}}
				switch rng.IntN(4) {
				case 0:
					r.Decision = receipt.Decision{Verdict: receipt.Deny, Guard: pick("human-approval", "forbidden_paths", "approval-timeout"), Reason: "no"}
				case 1:
					r.Decision = receipt.Decision{Verdict: receipt.Incomplete, Reason: "awaiting"}
					r.Metadata["approval_request_id"] = fmt.Sprintf("ar-%d", i+j)
				default:
					r.Decision = receipt.Decision{Verdict: receipt.Allow}
				}
				if rng.IntN(3) == 0 {
					r.Metadata["approver"] = pick("k1", "k2")
					r.Metadata["approver_display_name"] = pick("Finance Lead", "CFO")
					r.Metadata["approval_latency_ms"] = rng.IntN(10_000)
				}
				if rng.IntN(10) == 0 {
					r.Metadata["auto_approved"] = true
				}
				tx.AppendReceipt(r)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		i += batch
	}
}

// Stored is one receipt as stored.
type Stored struct {
	Seq uint64
	RC  *receipt.Receipt
}

// AllStored reads every receipt in seq order.
func AllStored(t testing.TB, s kernel.Store) []Stored {
	t.Helper()
	var out []Stored
	err := s.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(1, tx.LastSeq(), func(seq uint64, raw []byte) bool {
			rc, err := receipt.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, Stored{seq, rc})
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RandomQuery is one of the query shapes the store tests cover: random
// filters on every indexed and decoded field, a time window within the
// log's (all is the log in seq order), cursor bounds, either direction,
// with or without decoding.
func RandomQuery(rng *rand.Rand, all []Stored) receipt.Query {
	first, last := all[0].RC.Timestamp, all[len(all)-1].RC.Timestamp
	n := len(all)
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	var q receipt.Query
	f := &q.Filter
	if rng.IntN(2) == 0 {
		f.Decision = pick("allow", "deny", "incomplete", "cancelled")
	}
	if rng.IntN(4) == 0 {
		f.Guard = pick("human-approval", "forbidden_paths", "nope")
	}
	if rng.IntN(3) == 0 {
		f.Server = pick("payments", "github", "db")
	}
	if rng.IntN(4) == 0 {
		f.Tool = pick("refund", "issue", "query", "x")
	}
	if rng.IntN(4) == 0 {
		f.Subject = pick("ed25519:aa", "ed25519:bb")
	}
	if rng.IntN(6) == 0 {
		f.RequestID = fmt.Sprintf("req-%d", rng.IntN(n/2))
	}
	if rng.IntN(3) == 0 {
		f.Meta = append(f.Meta, receipt.MetaFilter{Key: pick("approver", "auto_approved", "approval_request_id", "missing")})
	}
	if rng.IntN(4) == 0 {
		f.Meta = append(f.Meta, receipt.MetaFilter{Key: "approver_display_name", Value: pick("CFO", "Finance Lead"), HasValue: true})
	}
	if rng.IntN(2) == 0 {
		f.Since = first + rng.Int64N(last-first)
		if rng.IntN(2) == 0 {
			f.Until = f.Since + rng.Int64N(3_600_000*6)
		}
	}
	if rng.IntN(3) == 0 {
		q.After = uint64(rng.IntN(n))
	}
	if rng.IntN(3) == 0 {
		q.Before = uint64(rng.IntN(n + n/30))
	}
	q.Desc = rng.IntN(2) == 0
	q.Decode = rng.IntN(2) == 0
	return q
}

// The indexes answer exactly what a full scan with receipt.Filter answers,
// in seq order, for random filters, bounds and directions.
func testQueryMatchesFullScan(t *testing.T, b Backend) {
	s, _ := open(t, b)
	rng := rand.New(rand.NewPCG(1, 2))
	RandomLog(t, s, 3000, rng)
	all := AllStored(t, s)
	for i := 0; i < 300; i++ {
		q := RandomQuery(rng, all)
		f := &q.Filter
		var want []uint64
		for _, st := range all {
			if st.Seq > q.After && (q.Before == 0 || st.Seq < q.Before) && f.Match(st.RC) {
				want = append(want, st.Seq)
			}
		}
		if q.Desc {
			slices.Reverse(want)
		}
		var got []uint64
		err := s.QueryReceipts(q, func(seq uint64, raw []byte, rc *receipt.Receipt) bool {
			if q.Decode && (rc == nil || rc.Seq != seq) {
				t.Fatalf("query %+v: no decoded receipt for %d", q, seq)
			}
			if !bytes.Contains(raw, []byte(fmt.Sprintf(`"seq":%d,`, seq))) {
				t.Fatalf("raw for %d is another receipt", seq)
			}
			got = append(got, seq)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("query %+v:\n got %d %v\nwant %d %v", q, len(got), head(got), len(want), head(want))
		}
		// Stopping early stops.
		n := 0
		s.QueryReceipts(q, func(uint64, []byte, *receipt.Receipt) bool { n++; return n < 3 })
		if n != min(3, len(want)) {
			t.Fatalf("early stop visited %d", n)
		}
	}
}

func head(xs []uint64) []uint64 { return xs[:min(len(xs), 12)] }

// StatsFilters are the filters the stats tests cover, on the log all.
func StatsFilters(all []Stored) []receipt.Filter {
	return []receipt.Filter{{}, {Decision: "allow"}, {Decision: "deny", Guard: "human-approval"},
		{Decision: "allow", Meta: []receipt.MetaFilter{{Key: "approver"}}}, {Server: "db", Since: all[len(all)*8/25].RC.Timestamp, Until: all[len(all)*19/25].RC.Timestamp},
		{Meta: []receipt.MetaFilter{{Key: "approver_display_name", Value: "CFO", HasValue: true}}}, {RequestID: "req-7"}, {Decision: "cancelled"}}
}

// StatsGroups are the group_by values the stats tests cover.
var StatsGroups = []string{"", "decision", "guard", "tool_server", "tool_name", "subject", "metadata.approver_display_name", "metadata.auto_approved", "metadata.none"}

// Index-counted stats equal stats over every decoded match.
func testStatsMatchFullScan(t *testing.T, b Backend) {
	s, _ := open(t, b)
	rng := rand.New(rand.NewPCG(9, 9))
	RandomLog(t, s, 2500, rng)
	all := AllStored(t, s)
	for _, f := range StatsFilters(all) {
		for _, g := range StatsGroups {
			want, _ := receipt.NewStats(g)
			for _, st := range all {
				if f.Match(st.RC) {
					want.Add(st.RC)
				}
			}
			got, err := s.ReceiptStats(f, g)
			if err != nil {
				t.Fatal(err)
			}
			if js(got) != js(want.Result()) {
				t.Fatalf("filter %+v group %q:\n got %s\nwant %s", f, g, js(got), js(want.Result()))
			}
		}
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }
