//go:build unix

package secretfile

import (
	"fmt"
	"os"
	"syscall"
)

// openFlags opens without blocking: opening a FIFO for reading otherwise
// waits for a writer, so a FIFO put where a key belongs would hang chiod's
// start-up before Read could refuse it as not a regular file. On a regular
// file O_NONBLOCK changes nothing.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

// CheckMode refuses a secret file with any group or other permission
// bit (mode & 0o077): only its owner, the user chiod runs as, may use it.
func CheckMode(path string, m os.FileMode) error {
	if m.Perm()&0o077 != 0 {
		return fmt.Errorf("%s holds a secret but its mode %#o lets other users read or change it; "+
			"run `chmod 600 %s` (chiod writes its own secret files with mode 0600)", path, m.Perm(), path)
	}
	return nil
}
