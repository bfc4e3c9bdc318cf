package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The errors a newcomer meets first, before chiod has started anything,
// say what to do about them, not only what failed.

// missingPolicy explains a policy file that is not there: chiod reads
// chio.toml in the working directory unless -config names another, so a
// first `chiod` run without -config (or with a mistyped path) ends here.
// Any other error of the load is returned as it is.
func missingPolicy(path string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Lstat(path); !errors.Is(serr, fs.ErrNotExist) {
		return err // the file is there: something on its way is not
	}
	return fmt.Errorf("no policy file at %s (%w): name yours with -config FILE "+
		"(to try chio from a checkout: chiod -config examples/policies/quickstart.toml)", path, fs.ErrNotExist)
}

// listenError explains a listen address that is taken: most often a chiod
// left running, whose address the quick start's policy also names.
func listenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen: %s is in use (a chiod still running, or another program): stop it, "+
			"or choose another address with -listen ADDR or [kernel] listen: %w", addr, err)
	}
	return fmt.Errorf("listen: %w", err)
}
