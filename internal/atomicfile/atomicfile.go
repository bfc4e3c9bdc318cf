// Package atomicfile replaces a file's content durably: after a crash the
// file holds the old content or the new, never a torn mix or nothing.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Write makes path hold data: a temporary file beside it, fsync, rename,
// fsync of the directory.
func Write(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // no-op once renamed
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// writeTemp writes data to a new temporary file beside path (mode 0600),
// synced and closed, and returns its name; on error nothing is left.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	if err := fill(f, data); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
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
// and written after can be. On a filesystem without hard links it is
// created in place all the same (createInPlace), rather than not at all.
func Create(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := link(tmp, path); err != nil {
		if !noHardLinks(err) {
			return err
		}
		// A filesystem without hard links (vfat, some SMB and FUSE
		// mounts): the file is created in place instead, never replacing
		// one. A crash can then leave it empty, which its readers take
		// as missing (chiod's secret files are created again).
		return createInPlace(path, data)
	}
	return SyncDir(filepath.Dir(path))
}

// noHardLinks reports whether err is link(2) saying the filesystem has no
// hard links.
func noHardLinks(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EOPNOTSUPP) ||
		errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.ENOSYS)
}

// createInPlace creates path (O_EXCL, mode 0600), writes data and syncs
// the file and its directory.
func createInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := fill(f, data); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// link is os.Link (tests replace it).
var link = os.Link

// fill writes data to f, syncs and closes it.
func fill(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
