package dispatch

import (
	"fmt"
	"io/fs"
	"os"
)

// refuseLink errs when path is a symbolic link. The builtin tools' state
// is chiod's own entries in its data dir: through a link planted at one,
// chiod would append refunds to (or truncate, or create) the file it
// names, keep its records in another directory, or let delete_file delete
// in the tree it names.
func refuseLink(path string) error {
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link; chiod keeps only its own files there: remove the link", path)
	}
	return nil // absent is made; another error shows when it is used
}
