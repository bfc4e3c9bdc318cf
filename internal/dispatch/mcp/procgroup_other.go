//go:build !unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup: no process groups here; the server runs as an ordinary
// child.
func ownProcessGroup() *syscall.SysProcAttr { return nil }

// signalGroup ends cmd's process (there is no gentler signal to send
// first, nor a group to reach its children).
func signalGroup(cmd *exec.Cmd, kill bool) { _ = cmd.Process.Kill() }
