//go:build unix

package dispatch

import "syscall"

// noFollow makes opening the builtin tools' ledger fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW
