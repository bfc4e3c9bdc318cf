package boltstore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/store/boltstore"
)

// A chio.db cut short (a copy that stopped half-way, a full disk during a
// restore) ends before the pages its meta page says it has. bbolt maps the
// file and reads those pages at open: past the end, the read is a SIGBUS
// that kills chiod with a Go stack trace instead of saying what is wrong.
// Open refuses it, saying it is truncated, and changes nothing.
func TestTruncatedFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chio.db")
	writeStore(t, path, keyA, 300)
	// bbolt grows the file ahead of its pages (16 MiB here), so cutting it
	// in half may lose none; 300 receipts take more than 64 KiB of pages.
	if err := os.Truncate(path, 64<<10); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, keyA, boltstore.Options{})
	if err == nil {
		s.Close()
		t.Fatal("opened a chio.db cut to 64 KiB, shorter than its pages")
	}
	if !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("a truncated file: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the refused open changed the file")
	}
}
