package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// A key or capability path that names no file is most often a typo, or a
// shell in another directory than the one the file was made in: the error
// says which file is missing and which command makes one.

// missingKey explains a private key file that is not there; any other
// error of the load is returned as it is.
func missingKey(path string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fmt.Errorf("no key file at %s (%w): name a key `chio keygen --out FILE` made", path, fs.ErrNotExist)
}

// readCapabilityFile reads the capability an agent calls with.
func readCapabilityFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no capability file at %s (%w): name the file `chio capability issue … --out FILE` wrote",
			path, fs.ErrNotExist)
	}
	return raw, err
}
