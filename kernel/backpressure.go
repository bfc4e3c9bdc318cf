package kernel

import (
	"context"
	"errors"
	"time"
)

// Back-pressure after a commitment.
//
// A store whose commit queue is full answers ErrQueueFull at once, without
// running the transaction: it is healthy, only busy. For a new call that
// is the caller's answer (fail closed, nothing happened). But once a
// human's vote or a tool's answer is durable or known, the commit that
// follows must land: failing it would leave the call in flight until the
// store heals or chiod restarts, which a healthy store never triggers. So
// those commits wait out a full queue, with backoff, until it lands, the
// caller's context ends, or the kernel shuts down (recovery finishes the
// call at the next start).

// Backoff between attempts on a full commit queue.
const (
	queueFullBackoffMin = time.Millisecond
	queueFullBackoffMax = 100 * time.Millisecond
)

// updateAfterVote is Store.Update for a commit that follows a durable vote
// or a tool's answer: a full queue is retried, any other error returned.
// fn must be safe to run again (it is, like every Update function, run
// from scratch on each attempt).
func (k *Kernel) updateAfterVote(ctx context.Context, fn func(Tx) error) error {
	backoff := queueFullBackoffMin
	for {
		err := k.update(ctx, fn)
		if !errors.Is(err, ErrQueueFull) {
			return err
		}
		if serr := k.sleep(ctx, backoff); serr != nil {
			return err // shutting down or cancelled: the full queue's error stands
		}
		backoff = min(2*backoff, queueFullBackoffMax)
	}
}
