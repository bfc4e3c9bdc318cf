// Package atomicfile replaces a file's content durably: after a crash the
// file holds the old content or the new, never a torn mix or nothing.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write makes path hold data: a temporary file beside it, fsync, rename,
// fsync of the directory.
func Write(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir makes a directory's entries (a rename, a new file) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Create makes path hold data when path does not exist, never replacing a
// file (when it exists, the error satisfies errors.Is(err, os.ErrExist)):
// data is written and synced under a temporary name (mode 0600) and then
// linked to path, so that after a crash path holds the whole of data or
// is missing, never empty or torn, as a file created in place (O_EXCL)
// and written after can be.
func Create(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := link(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// link is os.Link (tests replace it).
var link = os.Link
