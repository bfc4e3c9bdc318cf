package httpapi

// ExportsWaiting is how many exports wait for their credential's share
// (for tests outside the package: an export parked in that wait).
func (s *Server) ExportsWaiting() int {
	s.exporters.mu.Lock()
	defer s.exporters.mu.Unlock()
	n := 0
	for _, w := range s.exporters.waiting {
		n += w
	}
	return n
}
