//go:build unix

package daemon

import (
	"fmt"
	"io/fs"

	"github.com/chiokernel/chio/policy"
)

// loadPolicy loads the policy file chiod runs, refusing one that every
// local user may write: the policy says who may call what and who
// approves, so such a file would let any user grant themselves anything
// at the next start or SIGHUP. (Group-writable files are left alone: on
// systems whose users each have a private group, the default umask makes
// every file group-writable.)
func loadPolicy(path string) (*policy.Policy, error) {
	return policy.LoadChecked(path, func(fi fs.FileInfo) error {
		if fi.Mode().Perm()&0o002 != 0 {
			return fmt.Errorf("policy file %s has mode %#o: other users may write it, and so grant themselves anything; "+
				"run `chmod o-w %s`", path, fi.Mode().Perm(), path)
		}
		return nil
	})
}
