//go:build unix

package daemon

import (
	"fmt"
	"os"
)

// checkDataDirMode refuses a data dir that group or others may write to
// (mode & 0o022, the sticky bit notwithstanding): they could replace
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
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("refusing to start: data dir %s has mode %#o, which lets other users replace the kernel key, tokens and store in it; "+
			"run `chmod 700 %s` (chiod makes its data dir with mode 0700)", dir, fi.Mode().Perm(), dir)
	}
	return nil
}
