//go:build !linux

package daemon

// hideProcess: outside Linux there is no /proc/<pid>/environ for a
// process of the same user to read.
func hideProcess() error { return nil }
