package kernel

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/chiokernel/chio/approval"
)

// Several kernels (chiod replicas) may share one store. Each arms timers
// only for the requests it parked or saw at start-up, and delivers only the
// calls it decided; the others' work reaches it through the store:
//
//   - a deadline is fired by whichever kernel claims it first: the one that
//     armed the timer, or, when that kernel is gone, the periodic sweep of
//     another (claims are exclusive, and Expire re-checks the request inside
//     its transaction, so a deadline takes effect exactly once);
//   - calls left dispatching by a kernel that is gone are claimed by another
//     one and finished like a crash recovery (resent with the same
//     Idempotency-Key, or settled as unknown for at_most_once).
//
// A store used by one kernel alone does not implement Replicated and none
// of this runs.

// Replicated is implemented by a store that several kernels share.
type Replicated interface {
	// ClaimDeadlines claims, for this kernel, up to limit pending requests
	// whose deadline (expires_at) is at or before now and that no other
	// live kernel has claimed; with id set, only that request. It returns
	// the claimed approval ids; the claim lapses after a while, so a kernel
	// that dies holding one delays its deadline, never loses it.
	ClaimDeadlines(ctx context.Context, now time.Time, id string, limit int) ([]string, error)
	// ClaimOrphans claims up to limit calls left dispatching by kernels that
	// are gone, and returns their records: this kernel now finishes them.
	ClaimOrphans(ctx context.Context, limit int) ([]*CallRecord, error)
	// OwnDispatching lists up to limit calls dispatching under this
	// kernel, with request ids after after, in id order. The kernel asks
	// only after a ClaimOrphans failed: that claim may have committed with
	// its answer lost, making calls this kernel's that it never saw.
	OwnDispatching(ctx context.Context, after string, limit int) ([]*CallRecord, error)
}

// RateCounter counts calls per key over a sliding minute for every kernel
// sharing a store (max_calls_per_minute). A store that implements it
// replaces the kernel's in-memory window.
type RateCounter interface {
	// HitRate records a call at now under key and returns how many calls
	// (this one included) fall in the minute before now.
	HitRate(key string, now time.Time) (int, error)
}

// Replica sweep parameters.
const (
	// SweepInterval is how often a replica looks for deadlines and calls
	// that no live replica is handling.
	SweepInterval = time.Second
	// SweepBatch bounds what one sweep claims.
	SweepBatch = 64
	// LostClaimWindow is how long after a failed ClaimOrphans each sweep
	// also looks through this kernel's own calls in flight (ownStranded):
	// the failed claim may still commit until the store gives up on it.
	LostClaimWindow = time.Minute
)

// startSweep runs the replica sweep until Close.
func (k *Kernel) startSweep(r Replicated) {
	k.sweepOnce.Do(func() {
		go func() {
			t := time.NewTicker(SweepInterval)
			defer t.Stop()
			for {
				select {
				case <-k.stop:
					return
				case <-t.C:
				}
				k.sweep(r)
			}
		}()
	})
}

// sweep fires the deadlines nobody else claimed and takes over the calls
// of replicas that are gone.
func (k *Kernel) sweep(r Replicated) {
	ctx := context.Background()
	ids, err := r.ClaimDeadlines(ctx, k.clock.Now(), "", SweepBatch)
	if err != nil {
		slog.Warn("replica sweep: claiming deadlines failed; retrying next sweep", "err", err)
	}
	for _, id := range ids {
		if k.stopping() {
			return
		}
		if err := k.Expire(ctx, id); err != nil && !errors.Is(err, approval.ErrNotPending) && !errors.Is(err, ErrNotFound) {
			// The claim lapses and the deadline is fired again later.
			slog.Error("replica sweep: deadline handling failed; it is retried when the claim lapses", "approval_id", id, "err", err)
		}
	}
	k.reconcileAgain(ctx)
	if err := k.RecoverInFlight(ctx); err != nil {
		slog.Warn("replica sweep: claiming calls of replicas that are gone failed; retrying next sweep", "err", err)
	}
	k.tellLostVotes()
	k.tellLostEndings()
}

// claimDeadline asks a shared store for the right to fire id's deadline.
// A store used by this kernel alone always grants it.
func (k *Kernel) claimDeadline(id string) (bool, error) {
	r, ok := k.store.(Replicated)
	if !ok {
		return true, nil
	}
	ids, err := r.ClaimDeadlines(context.Background(), k.clock.Now(), id, 1)
	return len(ids) == 1, err
}

// recentCalls counts a call against max_calls_per_minute: in the store when
// it is shared (every replica counts), else in memory. A shared count that
// cannot be read fails closed: the call counts as over the limit.
func (k *Kernel) recentCalls(key string, now time.Time, limit int) int {
	if rc, ok := k.store.(RateCounter); ok {
		n, err := rc.HitRate(key, now)
		if err != nil {
			slog.Warn("max_calls_per_minute: the shared count is unreadable; counting the call as over the limit", "err", err)
			return limit + 1
		}
		return n
	}
	return k.rate.hit(key, now, limit)
}
