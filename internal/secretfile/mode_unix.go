//go:build unix

package secretfile

import (
	"fmt"
	"os"
)

// CheckMode refuses a secret file with any group or other permission
// bit (mode & 0o077): only its owner, the user chiod runs as, may use it.
func CheckMode(path string, m os.FileMode) error {
	if m.Perm()&0o077 != 0 {
		return fmt.Errorf("%s holds a secret but its mode %#o lets other users read or change it; "+
			"run `chmod 600 %s` (chiod writes its own secret files with mode 0600)", path, m.Perm(), path)
	}
	return nil
}
