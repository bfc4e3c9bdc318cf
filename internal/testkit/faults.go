package testkit

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/chiokernel/chio/kernel"
)

// DownAfterStore wraps a store (Options.WrapStore) that goes down on
// demand: after DownAfter(n), n more updates commit, then every update
// fails with kernel.ErrUnavailable, writing nothing. DownAfter(1) before a
// vote lets the vote's own commit land and fails every step after it.
type DownAfterStore struct {
	kernel.Store
	left atomic.Int64 // updates still allowed; < 0: not armed
}

// NewDownAfterStore returns an unarmed wrapper; set Store (WrapStore does).
func NewDownAfterStore() *DownAfterStore {
	s := &DownAfterStore{}
	s.left.Store(-1)
	return s
}

// Wrap is an Options.WrapStore.
func (s *DownAfterStore) Wrap(inner kernel.Store) kernel.Store { s.Store = inner; return s }

// DownAfter lets n more updates commit, then fails every one.
func (s *DownAfterStore) DownAfter(n int64) { s.left.Store(n) }

// Up makes the store commit again.
func (s *DownAfterStore) Up() { s.left.Store(-1) }

func (s *DownAfterStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	for {
		left := s.left.Load()
		if left < 0 {
			return s.Store.Update(ctx, fn)
		}
		if left == 0 {
			return fmt.Errorf("%w: injected: the store went down", kernel.ErrUnavailable)
		}
		if s.left.CompareAndSwap(left, left-1) {
			return s.Store.Update(ctx, fn)
		}
	}
}

// LostAnswerStore wraps a store (Options.WrapStore) whose next commit, once
// armed, lands but is reported failed, as an fsync error on bbolt or a
// PostgreSQL COMMIT whose answer was lost: the write is durable and the
// caller is told kernel.ErrUnavailable. Every update after it fails (the
// store is down) until Up. Armed before a vote, it makes the vote's own
// commit uncertain (kernel.ErrVoteUncertain).
type LostAnswerStore struct {
	kernel.Store
	armed, down atomic.Bool
}

// Wrap is an Options.WrapStore.
func (s *LostAnswerStore) Wrap(inner kernel.Store) kernel.Store { s.Store = inner; return s }

// LoseNextAnswer makes the next update commit and report a failure.
func (s *LostAnswerStore) LoseNextAnswer() { s.armed.Store(true) }

// Up makes the store commit (and answer) again.
func (s *LostAnswerStore) Up() { s.down.Store(false) }

func (s *LostAnswerStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if s.down.Load() {
		return fmt.Errorf("%w: injected: the store is down after a lost commit answer", kernel.ErrUnavailable)
	}
	if !s.armed.CompareAndSwap(true, false) {
		return s.Store.Update(ctx, fn)
	}
	err := s.Store.Update(ctx, fn) // durable
	s.down.Store(true)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: injected: fsync: input/output error", kernel.ErrUnavailable)
}
