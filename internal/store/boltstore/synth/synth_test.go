package synth

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

func TestWriteDataDir(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDataDir(context.Background(), Options{Dir: dir, Receipts: 3000, Days: 2, Seed: 5}, io.Discard); err != nil {
		t.Fatal(err)
	}
	// chiod's view of the directory: the policy loads, the key opens the store.
	if _, err := policy.Load(filepath.Join(dir, "chio.toml")); err != nil {
		t.Fatal(err)
	}
	key, err := keys.LoadPrivateKey(filepath.Join(dir, "kernel.pem"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(filepath.Join(dir, "chio.db"), key, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kinds := map[string]int{}
	prev := int64(0)
	s.View(func(tx kernel.ReadTx) error {
		if tx.LastSeq() != 3000 {
			t.Fatalf("LastSeq %d", tx.LastSeq())
		}
		return tx.Receipts(1, 3000, func(seq uint64, raw []byte) bool {
			r, err := receipt.Verify(raw, key.Public())
			if err != nil {
				t.Fatal(err)
			}
			if r.Timestamp < prev {
				t.Fatalf("seq %d goes back in time", seq)
			}
			prev = r.Timestamp
			k := r.Decision.Verdict + "/" + r.Decision.Guard
			if _, ok := r.Metadata["auto_approved"]; ok {
				k = "auto"
			} else if _, ok := r.Metadata["batch_approval_id"]; ok {
				k = "batch"
			}
			kinds[k]++
			return true
		})
	})
	for _, k := range []string{"allow/", "incomplete/", "deny/human-approval", "deny/approval-timeout", "auto", "batch", "deny/rate_limit"} {
		if kinds[k] == 0 {
			t.Errorf("no %s receipts: %v", k, kinds)
		}
	}
	err = WriteDataDir(context.Background(), Options{Dir: dir, Receipts: 10}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "fresh data directory") {
		t.Fatalf("second run over a store: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "kernel.pem")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("kernel.pem mode %v", fi.Mode())
	}
}
