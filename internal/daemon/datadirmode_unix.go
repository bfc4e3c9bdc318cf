//go:build unix

package daemon

import (
	"fmt"
	"os"
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
