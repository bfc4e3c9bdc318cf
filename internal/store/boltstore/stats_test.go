package boltstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A value longer than MaxIndexedValue (an agent chooses its tool_name) has
// no index entries. Stats counted from the indexes must still equal a full
// scan: such receipts grouped under their value, with their latency, not
// lumped into the "" (no value) group.
func TestStatsGroupOverLongIndexedValueAsFullScan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "long.db")
	s := open(t, path)
	long := strings.Repeat("t", boltstore.MaxIndexedValue+88)
	longSubject := "ed25519:" + strings.Repeat("b", boltstore.MaxIndexedValue)
	var all []*receipt.Receipt
	for i, tool := range []string{"short", long, long, "short", long} {
		r := &receipt.Receipt{ID: fmt.Sprintf("rc-%d", i), RequestID: "r", Subject: "ed25519:aa", ToolServer: "demo", ToolName: tool,
			Action: "invoke", Timestamp: 1_700_000_000_000 + int64(i), Decision: receipt.Decision{Verdict: receipt.Allow},
			Metadata: map[string]any{"approval_latency_ms": 1000 * (i + 1)}}
		if i == 3 {
			r.Subject = longSubject
		}
		if i == 4 {
			r.Decision = receipt.Decision{Verdict: receipt.Deny, Guard: "capability"}
			r.Metadata = nil
		}
		all = append(all, r)
		if err := s.Update(context.Background(), func(tx kernel.Tx) error { tx.AppendReceipt(r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	check := func(s *boltstore.Store) {
		t.Helper()
		for _, c := range []struct {
			groupBy string
			f       receipt.Filter
		}{
			{"tool_name", receipt.Filter{}},
			{"tool_name", receipt.Filter{Decision: receipt.Allow}},
			{"tool_name", receipt.Filter{Since: 1_700_000_000_002}},
			{"tool_name", receipt.Filter{Tool: "short"}},
			{"subject", receipt.Filter{}},
			{"guard", receipt.Filter{}},
			{"", receipt.Filter{}},
		} {
			want, _ := receipt.NewStats(c.groupBy)
			for _, r := range all {
				if c.f.Match(r) {
					want.Add(r)
				}
			}
			got, err := s.ReceiptStats(c.f, c.groupBy)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want.Result())
			if string(g) != string(w) {
				short := func(b []byte) string {
					return strings.NewReplacer(long, "t×600", longSubject, "ed25519:b×512").Replace(string(b))
				}
				t.Fatalf("stats by %q with %+v differ from a full scan:\n got %s\nwant %s", c.groupBy, c.f, short(g), short(w))
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A store indexed by a build that kept no list of over-long values gets
	// one when opened.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(btx *bolt.Tx) error { return btx.DeleteBucket([]byte("ix_long")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = open(t, path)
	defer s.Close()
	check(s)
}
