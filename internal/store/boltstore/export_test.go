package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

func exportOf(t *testing.T, s *boltstore.Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Editing a stored receipt behind the kernel's back is caught: the proof
// route refuses, the export fails; editing its leaf too stops the restart.
func TestTamperedStoreIsCaught(t *testing.T) {
	key := keys.FromSeed(bytes.Repeat([]byte{12}, 32))
	path := filepath.Join(t.TempDir(), "chio.db")
	log := receipt.NewLog(key, receipt.LogOptions{})
	s, err := boltstore.Open(path, key, boltstore.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	log.Start(context.Background(), s)
	if _, err := synth.Generate(context.Background(), s, key, synth.Config{Receipts: 200, Days: 1, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	log.Close(context.Background())
	s.Close()

	edit := func(bucket string, seq uint64, f func([]byte) []byte) {
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], seq)
		db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(bucket))
			return b.Put(k[:], f(bytes.Clone(b.Get(k[:]))))
		})
	}
	edit("receipts", 42, func(raw []byte) []byte {
		return bytes.Replace(raw, []byte(`"seq":42`), []byte(`"seq":42,"x":0`), 1)[:len(raw)] // same length, one byte changed
	})
	edit("receipts", 43, func(raw []byte) []byte { raw[len(raw)-3] ^= 1; return raw })

	log = receipt.NewLog(key, receipt.LogOptions{})
	s, err = boltstore.Open(path, key, boltstore.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Start(context.Background(), s); err != nil {
		t.Fatal(err) // the leaves still match: only the receipt changed
	}
	var raw []byte
	s.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(43, 43, func(_ uint64, v []byte) bool { raw = bytes.Clone(v); return false })
	})
	_, cp, _ := log.Latest()
	if _, err := log.Prove(43, raw, cp); !errors.Is(err, receipt.ErrLogCorrupt) {
		t.Fatalf("proof of an edited receipt: %v", err)
	}
	rep, err := receipt.VerifyExport(bytes.NewReader(exportOf(t, s)), receipt.VerifyOptions{KernelKey: key.Public()})
	if err != nil || rep.OK() {
		t.Fatalf("edited store verified: %v", err)
	}
	var msgs []string
	for _, p := range rep.Problems {
		msgs = append(msgs, p.String())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"line 43: malformed receipt", "line 44: receipt rc-", "(seq 43): signature does not verify", "does not match the root recomputed"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}
	log.Close(context.Background())
	s.Close()

	// Now the leaf too: the log no longer produces the signed root.
	edit("leaves", 43, func(h []byte) []byte { h[0] ^= 1; return h })
	log = receipt.NewLog(key, receipt.LogOptions{})
	s, err = boltstore.Open(path, key, boltstore.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := log.Start(context.Background(), s); !errors.Is(err, receipt.ErrLogCorrupt) {
		t.Fatalf("start over an edited leaf: %v", err)
	}
}
