//go:build !unix

package daemon

import "os"

// noFollow: no O_NOFOLLOW here. lockDataDir's same-file check (Lstat)
// still refuses a link before the pid is written, but a dangling link's
// target may be created first.
const noFollow = 0

// tryLock has no advisory lock to take here: the store's own file lock
// still keeps a second chiod out, only with a less helpful message.
func tryLock(*os.File) (busy bool, err error) { return false, nil }
