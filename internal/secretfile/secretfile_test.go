package secretfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadOwnerOnlyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kernel.pem")
	if err := os.WriteFile(p, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Read(p)
	if err != nil || string(b) != "secret" {
		t.Fatalf("Read = %q, %v", b, err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v, want os.ErrNotExist", err)
	}
	if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: err = %v", err)
	}
}
