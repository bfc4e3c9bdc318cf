//go:build !unix

package daemon

// checkDataDirMode: outside Unix, modes do not say who may write a
// directory (access is by ACL), so the data dir's ACL is the operator's to
// set (as secretfile.CheckMode).
func checkDataDirMode(string) error { return nil }

// checkDataDirParents: outside Unix, as checkDataDirMode.
func checkDataDirParents(string) error { return nil }
