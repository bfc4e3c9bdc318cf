package pgtest

import (
	"fmt"
	"syscall"
)

// Crash stops the server as `pg_ctl stop -m immediate` does (SIGQUIT to
// the postmaster): every backend is killed at once, no checkpoint is
// written, and clients see their connections cut. Restart brings it back.
func (s *Server) Crash() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGQUIT)
	<-s.done
	if s.logf != nil {
		s.logf.Close()
		s.logf = nil
	}
}

// Restart starts a crashed server again on the same port and data
// directory (it runs crash recovery) and returns once it accepts
// connections. Every database, and what was committed, is still there.
func (s *Server) Restart() error {
	select {
	case <-s.done:
	default:
		return fmt.Errorf("pgtest: restart a server that is running")
	}
	s.done = make(chan struct{})
	return s.start(s.bin, s.data, s.cred)
}
