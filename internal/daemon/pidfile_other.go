//go:build !unix

package daemon

import "os"

// tryLock has no advisory lock to take here: the store's own file lock
// still keeps a second chiod out, only with a less helpful message.
func tryLock(*os.File) (busy bool, err error) { return false, nil }
