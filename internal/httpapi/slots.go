package httpapi

import "sync"

// slots counts concurrent holders per key — an agent's long-polls, a
// credential's streams — so that one key cannot take a whole pool. A key
// is remembered only while it holds a slot, so the map is bounded by the
// pool it guards.
type slots struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes one of key's max slots; false when all are taken.
func (s *slots) acquire(key string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	if s.n[key] >= max {
		return false
	}
	s.n[key]++
	return true
}

// release gives back one slot taken by acquire.
func (s *slots) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[key]--; s.n[key] <= 0 {
		delete(s.n, key)
	}
}

// held is how many slots key holds (tests, metrics).
func (s *slots) held(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[key]
}
