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
	// waiting[key] counts acquireWithin's waiters for key, at most key's
	// max (it exists only while one waits): one more is refused at once,
	// so waiters are bounded like the slots they wait for.
	waiting map[string]int
}

// acquire takes one of key's max slots; false when all are taken.
func (s *slots) acquire(key string, max int) bool {
	_, ok := s.tryAcquire(key, max)
	return ok
}

// acquireWithin is acquire that, when key's slots are all taken, waits up
// to wait for one of them to be released before giving up; it gives up at
// once when ctx ends or stop is closed, or when max others already wait
// for key. The wait is transport time (the real clock), like the write
// deadlines.
func (s *slots) acquireWithin(ctx context.Context, stop <-chan struct{}, key string, max int, wait time.Duration) bool {
	freed, ok := s.tryAcquire(key, max)
	if ok {
		return true
	}
	if !s.startWaiting(key, max) {
		return false
	}
	defer s.stopWaiting(key)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if freed == nil {
			if freed, ok = s.tryAcquire(key, max); ok {
				return true
			}
		}
		select {
		case <-freed: // a slot was released: try again (another may take it first)
			freed = nil
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
}

// startWaiting counts a waiter for key; false when max already wait.
func (s *slots) startWaiting(key string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting[key] >= max {
		return false
	}
	if s.waiting == nil {
		s.waiting = map[string]int{}
	}
	s.waiting[key]++
	return true
}

// stopWaiting ends a waiter counted by startWaiting.
func (s *slots) stopWaiting(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting[key]--; s.waiting[key] <= 0 {
		delete(s.waiting, key)
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
