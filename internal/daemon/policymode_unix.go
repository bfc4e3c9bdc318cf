//go:build unix

package daemon

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/chiokernel/chio/policy"
)

// loadPolicy loads the policy file chiod runs, refusing one that every
// local user may write: the policy says who may call what and who
// approves, so such a file would let any user grant themselves anything
// at the next start or SIGHUP. (Group-writable files are left alone: on
// systems whose users each have a private group, the default umask makes
// every file group-writable.) A file in a directory every local user may
// write is one they may replace, so that is refused too (checkPolicyDirs).
func loadPolicy(path string) (*policy.Policy, error) {
	if err := checkPolicyDirs(path); err != nil {
		return nil, err
	}
	return policy.LoadChecked(path, func(fi fs.FileInfo) error {
		if fi.Mode().Perm()&0o002 != 0 {
			return fmt.Errorf("policy file %s has mode %#o: other users may write it, and so grant themselves anything; "+
				"run `chmod o-w %s`", path, fi.Mode().Perm(), path)
		}
		return nil
	})
}

// checkPolicyDirs refuses a policy file that a directory every local user
// may write (o+w, not sticky) lies on the way to: a rename needs only the
// directory, so anyone could put their own policy (or their own directory
// holding one) in its place. The directories checked are those of the
// path as named (a symlink there can be replaced as well) and of the file
// it resolves to, each up to the root, as sshd's StrictModes does. A
// sticky directory (/tmp) is accepted: others cannot rename over what
// they do not own there.
func checkPolicyDirs(path string) error {
	named, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	real, err := filepath.EvalSymlinks(named)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	for _, p := range []string{named, real} {
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil {
				return fmt.Errorf("policy: %w", err)
			}
			if m := fi.Mode(); m.Perm()&0o002 != 0 && m&fs.ModeSticky == 0 {
				return fmt.Errorf("policy file %s is in directory %s of mode %#o: other users may replace it, and so grant themselves anything; "+
					"run `chmod o-w %s`", path, d, m.Perm(), d)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return nil
}
