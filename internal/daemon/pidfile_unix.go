//go:build unix

package daemon

import (
	"errors"
	"os"
	"syscall"
)

// noFollow makes opening chiod.pid fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW

// tryLock takes an exclusive flock on f without waiting; busy reports
// that another process holds it. The lock ends with the process.
func tryLock(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
