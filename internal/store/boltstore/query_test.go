package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// randomLog commits n receipts with a mix of every indexed attribute and
// timestamps that are only nearly increasing, in batches of random size.
func randomLog(t testing.TB, s *Store, n int, rng *rand.Rand) {
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

type stored struct {
	seq uint64
	rc  *receipt.Receipt
}

func allStored(t testing.TB, s *Store) []stored {
	var out []stored
	s.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(1, tx.LastSeq(), func(seq uint64, raw []byte) bool {
			rc, err := receipt.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, stored{seq, rc})
			return true
		})
	})
	return out
}

// The indexes answer exactly what a full scan with receipt.Filter answers,
// in seq order, for random filters, bounds and directions.
func TestQueryMatchesFullScan(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "q.db"))
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	randomLog(t, s, 3000, rng)
	all := allStored(t, s)
	first, last := all[0].rc.Timestamp, all[len(all)-1].rc.Timestamp
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for i := 0; i < 400; i++ {
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
			f.RequestID = fmt.Sprintf("req-%d", rng.IntN(1500))
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
			q.After = uint64(rng.IntN(3000))
		}
		if rng.IntN(3) == 0 {
			q.Before = uint64(rng.IntN(3100))
		}
		q.Desc = rng.IntN(2) == 0
		q.Decode = rng.IntN(2) == 0

		var want []uint64
		for _, st := range all {
			if st.seq > q.After && (q.Before == 0 || st.seq < q.Before) && f.Match(st.rc) {
				want = append(want, st.seq)
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

// A store written before the indexes existed is indexed when opened.
func TestOpenIndexesAnOlderStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s := open(t, path)
	randomLog(t, s, 500, rand.New(rand.NewPCG(3, 4)))
	want := allStored(t, s)
	s.Close()
	// Strip every index (and some leaves), as an older build left them.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(btx *bolt.Tx) error {
		for _, b := range indexBuckets {
			btx.DeleteBucket(b)
			btx.CreateBucket(b)
		}
		c := btx.Bucket(bucketLeaves).Cursor()
		for k, _ := c.Seek(seqKey(400)); k != nil; k, _ = c.Seek(seqKey(400)) {
			c.Delete()
		}
		return nil
	})
	db.Close()
	log := receipt.NewLog(testKey(), receipt.LogOptions{})
	s, err = Open(path, testKey(), Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if log.Size() != 500 {
		t.Fatalf("log size %d", log.Size())
	}
	var got int
	s.QueryReceipts(receipt.Query{Filter: receipt.Filter{Decision: "deny"}}, func(uint64, []byte, *receipt.Receipt) bool { got++; return true })
	n := 0
	for _, st := range want {
		if st.rc.Decision.Verdict == "deny" {
			n++
		}
	}
	if got != n || n == 0 {
		t.Fatalf("deny after reindex: %d, want %d", got, n)
	}
}

// A hole in the leaves (a receipt lost) refuses to open with a log.
func TestOpenRefusesLeafHole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hole.db")
	s := open(t, path)
	randomLog(t, s, 20, rand.New(rand.NewPCG(5, 6)))
	s.Close()
	db, _ := bolt.Open(path, 0o600, nil)
	db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketLeaves).Delete(seqKey(7)) })
	db.Close()
	if _, err := Open(path, testKey(), Options{Log: receipt.NewLog(testKey(), receipt.LogOptions{})}); err == nil || !strings.Contains(err.Error(), "receipt log corrupt") {
		t.Fatalf("open with a leaf hole: %v", err)
	}
}

// Index-counted stats equal stats over every decoded match.
func TestStatsMatchFullScan(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "s.db"))
	defer s.Close()
	rng := rand.New(rand.NewPCG(9, 9))
	randomLog(t, s, 2500, rng)
	all := allStored(t, s)
	filters := []receipt.Filter{{}, {Decision: "allow"}, {Decision: "deny", Guard: "human-approval"},
		{Decision: "allow", Meta: []receipt.MetaFilter{{Key: "approver"}}}, {Server: "db", Since: all[800].rc.Timestamp, Until: all[1900].rc.Timestamp},
		{Meta: []receipt.MetaFilter{{Key: "approver_display_name", Value: "CFO", HasValue: true}}}, {RequestID: "req-7"}, {Decision: "cancelled"}}
	for _, f := range filters {
		for _, g := range []string{"", "decision", "guard", "tool_server", "tool_name", "subject", "metadata.approver_display_name", "metadata.auto_approved", "metadata.none"} {
			want, _ := receipt.NewStats(g)
			for _, st := range all {
				if f.Match(st.rc) {
					want.Add(st.rc)
				}
			}
			got, err := s.ReceiptStats(f, g)
			if err != nil {
				t.Fatal(err)
			}
			w := want.Result()
			if js(got) != js(w) {
				t.Fatalf("filter %+v group %q:\n got %s\nwant %s", f, g, js(got), js(w))
			}
		}
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }
