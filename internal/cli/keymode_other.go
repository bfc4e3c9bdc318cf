//go:build !unix

package cli

import "io/fs"

// keyFileOpenToOthers: outside Unix, modes do not say who may read a file
// (access is by ACL); nothing is reported.
func keyFileOpenToOthers(string) (fs.FileMode, bool) { return 0, false }
