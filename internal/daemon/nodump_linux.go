package daemon

import (
	"fmt"
	"syscall"
)

// hideProcess makes chiod not dumpable: /proc/<pid>/environ, mem and the
// rest then belong to root, and no process of chiod's user may read or
// ptrace them. chiod's environment holds its tokens, channel secrets and
// DSN, and its memory the kernel key; the stdio MCP servers it starts run
// as its user (they inherit none of its environment, docs/mcp.md, but
// could read it from /proc otherwise). It also means no core dump. Their
// own processes are dumpable again (execve resets it).
func hideProcess() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("refusing to start: prctl(PR_SET_DUMPABLE, 0): %w", errno)
	}
	return nil
}
