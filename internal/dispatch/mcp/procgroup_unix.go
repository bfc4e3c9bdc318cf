//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts a stdio server as the leader of its own process
// group, so that signalGroup reaches what it spawned (`npx` runs the
// server as a child).
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends SIGTERM, or SIGKILL when kill is set, to cmd's
// process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
