//go:build unix

package daemon

import (
	"fmt"
	"os"
)

// checkSecretMode refuses a secret file with any group or other permission
// bit (mode & 0o077): only its owner, the user chiod runs as, may use it.
func checkSecretMode(path string, m os.FileMode) error {
	if m.Perm()&0o077 != 0 {
		return fmt.Errorf("refusing to start: %s holds a secret but its mode %#o lets other users read or change it; "+
			"run `chmod 600 %s` (chiod writes its own key and token files with mode 0600)", path, m.Perm(), path)
	}
	return nil
}
