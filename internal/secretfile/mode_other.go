//go:build !unix

package secretfile

import "os"

// CheckMode: outside Unix, file modes do not say who may read a file
// (access is by ACL), so the data dir's ACL is the operator's to set.
func CheckMode(string, os.FileMode) error { return nil }
