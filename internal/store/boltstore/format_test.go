package boltstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
)

// setMeta writes key=value into path's meta bucket, as another build would.
func setMeta(t *testing.T, path, key, value string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("meta"))
		if err != nil {
			return err
		}
		return b.Put([]byte(key), []byte(value))
	}); err != nil {
		t.Fatal(err)
	}
}

// A chio.db written by a newer chiod (rolled back to this one) may hold
// records and buckets whose meaning this build does not know: a call
// record's member that says "do not re-send", a bucket that is now the
// replay authority. Read without them, recovery could re-send a call or a
// token be accepted twice; rewritten, the members are lost. So the file
// records its format, and a build refuses a format newer than its own,
// saying what to do, and changes nothing.
func TestNewerFormatRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chio.db")
	writeStore(t, path, keyA, 10)
	setMeta(t, path, "format", "999")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, keyA, boltstore.Options{})
	if err == nil {
		s.Close()
		t.Fatal("opened a chio.db of format 999, written by a newer chiod")
	}
	if msg := err.Error(); !strings.Contains(msg, "999") || !strings.Contains(msg, "newer") {
		t.Fatalf("a newer format: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the refused open changed the file")
	}
}

// A chio.db that records its format has every bucket of it: one without
// the replay authority (consumed), say, lost it to an edit or to damage,
// not to an older build. Recreated empty, every approval token already
// used would be accepted again. Open refuses it, names the bucket, and
// changes nothing.
func TestMissingBucketRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chio.db")
	s, err := boltstore.Open(path, keyA, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(context.Background(), func(tx kernel.Tx) error { return tx.Consume("tok-1", "apr-1") }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("consumed")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err = boltstore.Open(path, keyA, boltstore.Options{})
	if err == nil {
		replay := s.Update(context.Background(), func(tx kernel.Tx) error { return tx.Consume("tok-1", "apr-1") })
		s.Close()
		t.Fatalf("opened a chio.db without its consumed bucket; the used token consumed again: %v", replay)
	}
	if !strings.Contains(err.Error(), `"consumed"`) {
		t.Fatalf("a missing bucket: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the refused open changed the file")
	}
}
