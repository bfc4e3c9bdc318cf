package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PIDFile is the name, in the data dir, of the file that holds the running
// chiod's pid (`kill -HUP $(cat chio-data/chiod.pid)` reloads that chiod
// and no other) and its lock on the data dir.
const PIDFile = "chiod.pid"

// ErrDataDirInUse is returned when another chiod holds the data dir.
var ErrDataDirInUse = errors.New("data dir in use by another chiod")

// dataDirLock is chiod's exclusive hold on its data dir: an flock on
// chiod.pid for as long as the process runs. Taken before the store is
// opened, it turns bbolt's silent wait for its own file lock into an
// immediate error that names the other process.
type dataDirLock struct {
	f    *os.File
	path string
}

// lockDataDir takes the lock and writes this process's pid.
func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, PIDFile)
	for range 10 {
		// noFollow: a symlink planted at the path is refused, not opened:
		// chiod truncates and writes this file, and would do so to the
		// link's target (or create a dangling link's).
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
		if err != nil {
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
				return nil, fmt.Errorf("pid file: %s is a symbolic link; chiod writes only a file of its own there: remove the link", path)
			}
			return nil, fmt.Errorf("pid file: %w", err)
		}
		if busy, err := tryLock(f); busy || err != nil {
			pid := readPID(f)
			f.Close()
			if busy {
				return nil, fmt.Errorf("%w (pid %s): %s is locked; stop that chiod or give this one another -data-dir", ErrDataDirInUse, pid, path)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// The chiod that held the lock removes the file as it exits; if it
		// did so between our open and our lock, we hold a lock on a file
		// no one else will open: start again.
		held, err1 := f.Stat()
		named, err2 := os.Lstat(path) // a link put there since is not our file
		if err1 != nil || err2 != nil || !os.SameFile(held, named) {
			f.Close()
			continue
		}
		if err := writePID(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("pid file: %w", err)
		}
		return &dataDirLock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("lock %s: the file keeps being replaced", path)
}

func readPID(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	if pid := strings.TrimSpace(string(b[:n])); pid != "" {
		return pid
	}
	return "unknown"
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	return f.Sync()
}

// release removes the pid file (so no stale pid is left to signal) and
// drops the lock.
func (l *dataDirLock) release() {
	os.Remove(l.path)
	l.f.Close()
}
