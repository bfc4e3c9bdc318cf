//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// checkDataDirMode refuses a data dir another user owns, or that group or
// others may write to (mode & 0o022, the sticky bit notwithstanding): they could replace
// kernel.pem, a token file or chio.db (a rename needs only the directory),
// or plant their own before the first start, a token they chose becoming
// the admin's. The files' own 0600 cannot stop that, as sshd's StrictModes
// knows. A dir others may only read is accepted: its files are 0600.
func checkDataDirMode(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("refusing to start: data dir %s is not a directory", dir)
	}
	// Its owner may write to it whatever its mode (a chmod away), and may
	// have planted their own token before the first start: a root chiod
	// reads another user's 0600 files as its own.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("refusing to start: data dir %s is owned by uid %d, not by uid %d that chiod runs as: its owner may replace "+
			"(or have planted) the kernel key, tokens and store in it; run `chown -R %d %s` if you trust what it holds, "+
			"or start on a new data dir", dir, st.Uid, os.Geteuid(), os.Geteuid(), dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("refusing to start: data dir %s has mode %#o, which lets other users replace the kernel key, tokens and store in it; "+
			"run `chmod 700 %s` (chiod makes its data dir with mode 0700)", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// checkDataDirParents refuses a data dir that a directory every user may
// write to (o+w, not sticky) lies on the way to: any of them could rename
// it away, with the kernel key and the store, and the next start would
// make a new deployment in its place (forgetting, say, the revocations of
// capabilities an authority_key signed). The directories checked are
// those of the path as named and, when it exists, of the directory it
// resolves to, each up to the root, as for the policy file
// (checkPolicyDirs); one not made yet is made by chiod, mode 0700.
func checkDataDirParents(dir string) error {
	named, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	paths := []string{named}
	if real, err := filepath.EvalSymlinks(named); err == nil {
		paths = append(paths, real)
	}
	for _, p := range paths {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("data dir: %w", err)
			}
			if err == nil && fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
				return fmt.Errorf("refusing to start: data dir %s is in directory %s of mode %#o: other users may rename it away, "+
					"with the kernel key and store, and put another in its place; run `chmod o-w %s`", dir, d, fi.Mode().Perm(), d)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return nil
}
