package atomicfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chiokernel/chio/internal/atomicfile"
)

// Write replaces the content whole and leaves no temporary file behind.
func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp.json")
	for _, want := range []string{"first\n", "second, longer\n", "3\n"} {
		if err := atomicfile.Write(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Fatalf("%q %v, want %q", got, err, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}

// Create never replaces a file, and leaves no temporary file beside it.
func TestCreateNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	if err := atomicfile.Create(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Create(path, []byte("two")); !errors.Is(err, os.ErrExist) {
		t.Fatalf("a second Create: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Fatalf("replaced: %q", b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left beside it: %v", ents)
	}
}
