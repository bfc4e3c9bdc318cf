// Package commitq is the group-commit queue both stores share: Update calls
// wait in a bounded queue that fails closed when full, one committer takes
// them in batches, and closing drains what was accepted before it stops.
package commitq

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/chiokernel/chio/kernel"
)

// Queue holds operations of type T waiting for the committer.
type Queue[T any] struct {
	ch      chan T
	closing chan struct{}
	mu      sync.RWMutex // Put against Close: nothing is accepted after Close
	closed  bool
	depth   atomic.Int64
}

// New returns a queue that accepts at most capacity waiting operations.
func New[T any](capacity int) *Queue[T] {
	return &Queue[T]{ch: make(chan T, capacity), closing: make(chan struct{})}
}

// Put enqueues v. A closed queue answers kernel.ErrUnavailable and a full
// one kernel.ErrQueueFull: the caller fails closed, nothing is dropped
// silently.
func (q *Queue[T]) Put(v T) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		return fmt.Errorf("%w (%w): store closed", kernel.ErrUnavailable, kernel.ErrNotCommitted)
	}
	select {
	case q.ch <- v:
		q.depth.Add(1)
		return nil
	default:
		return kernel.ErrQueueFull
	}
}

// Next blocks for the next batch: one operation, then whatever else is
// queued, up to max, appended to batch[:0]. After Close it returns what
// was accepted before, in batches, and then ok == false.
func (q *Queue[T]) Next(batch []T, max int) (_ []T, ok bool) {
	batch = batch[:0]
	select {
	case v := <-q.ch:
		q.depth.Add(-1)
		batch = append(batch, v)
	case <-q.closing:
		// Put cannot add anything now: what is queued is all there is.
	}
	batch = q.Absorb(batch, max)
	return batch, len(batch) > 0
}

// Absorb appends to batch what is queued now, without waiting, up to max
// in all (a committer takes in calls queued while it builds a commit).
func (q *Queue[T]) Absorb(batch []T, max int) []T {
	n := len(batch)
	for len(batch) < max {
		select {
		case v := <-q.ch:
			batch = append(batch, v)
			continue
		default:
		}
		break
	}
	q.depth.Add(-int64(len(batch) - n))
	return batch
}

// Close stops accepting operations and wakes the committer to drain. It
// reports whether this call closed the queue (false if already closed).
func (q *Queue[T]) Close() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.closed = true
	close(q.closing)
	return true
}

// Closing is closed once Close has been called.
func (q *Queue[T]) Closing() <-chan struct{} { return q.closing }

// Closed reports whether Close has been called.
func (q *Queue[T]) Closed() bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.closed
}

// Depth is how many operations wait for the committer.
func (q *Queue[T]) Depth() int64 { return q.depth.Load() }
