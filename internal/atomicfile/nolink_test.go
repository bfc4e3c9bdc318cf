package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A data dir on a filesystem without hard links (vfat, some SMB and FUSE
// mounts: link(2) answers EPERM or EOPNOTSUPP) must still get its secret
// files: chiod's first start creates kernel.pem and its tokens with Create,
// and failing there stops chiod from ever starting on such a mount. Create
// then writes the file in place (O_EXCL, synced), never replacing one.
func TestCreateWithoutHardLinks(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EPERM, syscall.EOPNOTSUPP, syscall.ENOSYS} {
		t.Run(errno.Error(), func(t *testing.T) {
			old := link
			link = func(string, string) error { return &os.LinkError{Op: "link", Err: errno} }
			defer func() { link = old }()
			dir := t.TempDir()
			path := filepath.Join(dir, "kernel.pem")
			if err := Create(path, []byte("secret\n")); err != nil {
				t.Fatalf("Create on a filesystem without hard links: %v", err)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != "secret\n" {
				t.Fatalf("file holds %q, %v", b, err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v, %v: want 0600", fi.Mode().Perm(), err)
			}
			if err := Create(path, []byte("other\n")); !errors.Is(err, os.ErrExist) {
				t.Fatalf("second Create: %v, want os.ErrExist (never replacing a file)", err)
			}
			if b, _ := os.ReadFile(path); string(b) != "secret\n" {
				t.Fatalf("the file was replaced: %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("temporary files left beside it: %v", entries)
			}
		})
	}
}
