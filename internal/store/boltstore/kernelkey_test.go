package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/store/boltstore/synth"
	"github.com/chiokernel/chio/kernel"
)

var (
	keyA = keys.FromSeed(bytes.Repeat([]byte{21}, 32))
	keyB = keys.FromSeed(bytes.Repeat([]byte{22}, 32))
)

// writeStore makes a chio.db signed by key holding n receipts.
func writeStore(t *testing.T, path string, key keys.PrivateKey, n int) {
	t.Helper()
	s, err := boltstore.Open(path, key, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		if _, err := synth.Generate(context.Background(), s, key, synth.Config{Receipts: n, Days: 1, Seed: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// wantKeyMismatch opens path with key, expects the refusal naming both
// keys and what to do, and checks the refused open left the file as it was.
func wantKeyMismatch(t *testing.T, path string, key keys.PrivateKey, stored keys.PublicKey) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, key, boltstore.Options{})
	if err == nil {
		s.Close()
		t.Fatalf("opened a chio.db signed by %s with kernel key %s", stored, key.Public())
	}
	msg := err.Error()
	if !errors.Is(err, boltstore.ErrKeyMismatch) || !strings.Contains(msg, stored.String()) ||
		!strings.Contains(msg, key.Public().String()) || !strings.Contains(msg, "kernel.pem") {
		t.Fatalf("another key: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the refused open changed the file")
	}
}

// A chio.db written under one kernel key does not open under another: a
// copy started as a second deployment would share the original's pending
// approval request ids (so one approval would answer both), and its log
// would be signed by two keys no auditor can verify as one.
func TestOtherKernelKeyRefused(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "chio.db")
	writeStore(t, orig, keyA, 30)

	copied := filepath.Join(dir, "copy.db")
	copyFile(t, orig, copied)
	wantKeyMismatch(t, copied, keyB, keyA.Public())
	wantKeyMismatch(t, orig, keyB, keyA.Public())

	// The key that wrote it still opens it, with everything in it.
	s, err := boltstore.Open(copied, keyA, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var last uint64
	s.View(func(tx kernel.ReadTx) error { last = tx.LastSeq(); return nil })
	if last != 30 {
		t.Fatalf("last seq %d after reopening", last)
	}
}

// A new store records its key at once: a copy taken before the first
// receipt is refused too.
func TestEmptyStoreRecordsItsKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chio.db")
	writeStore(t, path, keyA, 0)
	wantKeyMismatch(t, path, keyB, keyA.Public())
	writeStore(t, path, keyA, 0)
}

// forgetKey makes path look like a chio.db written before the store
// recorded its kernel key.
func forgetKey(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("meta")); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A store made before the key was recorded: its receipts say which key
// signed it; with none, the first key to open it is recorded.
func TestStoreWithoutRecordedKey(t *testing.T) {
	dir := t.TempDir()
	signed := filepath.Join(dir, "signed.db")
	writeStore(t, signed, keyA, 30)
	forgetKey(t, signed)
	wantKeyMismatch(t, signed, keyB, keyA.Public())
	writeStore(t, signed, keyA, 0) // opens, and records keyA
	forgetKey(t, signed)
	writeStore(t, signed, keyA, 0)

	empty := filepath.Join(dir, "empty.db")
	writeStore(t, empty, keyA, 0)
	forgetKey(t, empty)
	writeStore(t, empty, keyB, 0) // no receipts: keyB is recorded
	wantKeyMismatch(t, empty, keyA, keyB.Public())
}

// The heal's reopen (after a failed commit) opens whatever file is at the
// path now: one swapped in meanwhile (another deployment's chio.db
// restored over this one) is refused as at Open, not written to and
// signed under this kernel's key.
func TestHealReopenRefusesAnotherKernelsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chio.db")
	s, err := boltstore.Open(path, keyA, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := synth.Generate(context.Background(), s, keyA, synth.Config{Receipts: 2, Days: 1, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	writeStore(t, other, keyB, 30)
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if err := boltstore.ReopenForTest(s); !errors.Is(err, boltstore.ErrKeyMismatch) {
		t.Fatalf("reopened kernel %s's chio.db under kernel key %s: %v", keyB.Public(), keyA.Public(), err)
	}
}
