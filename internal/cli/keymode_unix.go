//go:build unix

package cli

import (
	"io/fs"
	"os"
)

// keyFileOpenToOthers reports whether group or others may read or write
// the key file at path (any bit of 0077, what sshd refuses for a key).
func keyFileOpenToOthers(path string) (fs.FileMode, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	return fi.Mode().Perm(), fi.Mode().Perm()&0o077 != 0
}
