package httpapi

import (
	"context"
	"sync"
	"time"
)

// slots counts concurrent holders per key — an agent's long-polls, a
// credential's streams — so that one key cannot take a whole pool. A key
// is remembered only while it holds a slot, so the maps are bounded by
// the pool they guard.
type slots struct {
	mu sync.Mutex
	n  map[string]int
	// freed[key] is closed at key's next release, for acquireWithin's
	// waiters; it exists only while key holds a slot.
	freed map[string]chan struct{}
}

// acquire takes one of key's max slots; false when all are taken.
func (s *slots) acquire(key string, max int) bool {
	_, ok := s.tryAcquire(key, max)
	return ok
}

// acquireWithin is acquire that, when key's slots are all taken, waits up
// to wait for one of them to be released before giving up; it gives up at
// once when ctx ends or stop is closed. The wait is transport time (the
// real clock), like the write deadlines.
func (s *slots) acquireWithin(ctx context.Context, stop <-chan struct{}, key string, max int, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		freed, ok := s.tryAcquire(key, max)
		if ok {
			return true
		}
		select {
		case <-freed: // a slot was released: try again (another may take it first)
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
}

// tryAcquire takes one of key's max slots, or returns a channel closed at
// key's next release.
func (s *slots) tryAcquire(key string, max int) (freed <-chan struct{}, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	if s.n[key] >= max {
		if s.freed == nil {
			s.freed = map[string]chan struct{}{}
		}
		ch := s.freed[key]
		if ch == nil {
			ch = make(chan struct{})
			s.freed[key] = ch
		}
		return ch, false
	}
	s.n[key]++
	return nil, true
}

// release gives back one slot taken by acquire or acquireWithin.
func (s *slots) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[key]--; s.n[key] <= 0 {
		delete(s.n, key)
	}
	if ch := s.freed[key]; ch != nil {
		close(ch)
		delete(s.freed, key)
	}
}

// held is how many slots key holds (tests, metrics).
func (s *slots) held(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[key]
}
