package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/kernel"
)

// Reads get a group commit too. Every decision starts with a View (the
// call's record, its capability's revocation), and a round trip per read
// per decision costs more CPU — in chiod and in PostgreSQL — than the
// decision itself. So Views' keyed lookups queue for a few reader
// goroutines, each of which sends everything queued since its last round
// trip as one pipeline with one statement per kind of lookup. Nobody waits
// for a batch to fill: an idle store answers a lookup in one round trip.

// readers is how many lookup pipelines may be in flight at once.
const readers = 2

// readLoop answers queued lookups until the store closes.
func (s *Store) readLoop() {
	defer s.bgWG.Done()
	for {
		var first *query
		select {
		case first = <-s.lookups:
		case <-s.bg.Done():
			return
		}
		qs := []*query{first}
	fill:
		for len(qs) < MaxBatch {
			select {
			case q := <-s.lookups:
				qs = append(qs, q)
			default:
				break fill
			}
		}
		s.readBatch(qs)
	}
}

func (s *Store) readBatch(qs []*query) {
	defer func() {
		for _, q := range qs {
			close(q.done)
		}
	}()
	ctx, cancel := context.WithTimeout(s.bg, ReadTimeout)
	defer cancel()
	batch := &pgx.Batch{}
	queueLookups(batch, qs, false)
	err := s.pool.SendBatch(ctx, batch).Close()
	if err != nil {
		for _, q := range qs {
			q.err = err
		}
	}
}

// lookup reads one row by key for a View, batched with concurrent Views.
func (s *Store) lookup(ctx context.Context, kind lookupKind, key string) (*query, error) {
	q := &query{kind: kind, key: key, done: make(chan struct{})}
	select {
	case s.lookups <- q:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", kernel.ErrUnavailable, ctx.Err())
	case <-s.bg.Done():
		return nil, fmt.Errorf("%w: store closed", kernel.ErrUnavailable)
	}
	select {
	case <-q.done:
	case <-s.bg.Done():
		return nil, fmt.Errorf("%w: store closed", kernel.ErrUnavailable)
	}
	if q.err != nil {
		return nil, fmt.Errorf("%w: %v", kernel.ErrUnavailable, q.err)
	}
	return q, nil
}
