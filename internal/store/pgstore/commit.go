package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// commitLoop is one committer: it takes everything queued (up to MaxBatch)
// and commits it as one transaction, until Close; then it drains.
func (s *Store) commitLoop() {
	defer s.wg.Done()
	batch := make([]*op, 0, MaxBatch)
	for {
		batch = batch[:0]
		select {
		case o := <-s.queue:
			batch = append(batch, o)
		case <-s.closing:
			for {
				batch = batch[:0]
			drain:
				for len(batch) < MaxBatch {
					select {
					case o := <-s.queue:
						batch = append(batch, o)
					default:
						break drain
					}
				}
				if len(batch) == 0 {
					return
				}
				s.commit(batch)
			}
		}
	fill:
		for len(batch) < MaxBatch {
			select {
			case o := <-s.queue:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// commit runs batch as one transaction and answers every caller. A
// function's own failure is its answer alone. A transaction that lost a
// race is run again; if it keeps losing, each function gets a transaction
// of its own, so one function that cannot commit fails alone.
func (s *Store) commit(batch []*op) {
	s.depth.Add(-int64(len(batch)))
	start := time.Now()
	s.commitGroup(batch)
	if s.opts.Observe != nil {
		s.opts.Observe(len(batch), time.Since(start))
	}
}

func (s *Store) commitGroup(live []*op) {
	for attempt := 0; ; attempt++ {
		res := s.runBatch(live)
		switch {
		case res.err == nil:
			s.setHealth(nil)
			for i, o := range live {
				o.done <- res.opErr[i]
			}
			if len(res.appended) > 0 {
				s.fed(res.appended)
			}
			return
		case retryable(res.err) && attempt < MaxRetries:
			// Lost a race: run again; the functions see the winner's state.
		case retryable(res.err) && len(live) > 1:
			for _, o := range live {
				s.commitGroup([]*op{o})
			}
			return
		case res.culprit >= 0 && pgCode(res.err) != "" && !retryable(res.err):
			// One function's statement failed in the database (aborting the
			// transaction): it fails alone, the rest run again.
			live[res.culprit].done <- fmt.Errorf("%w: %v", kernel.ErrUnavailable, res.err)
			live = append(live[:res.culprit:res.culprit], live[res.culprit+1:]...)
			if len(live) == 0 {
				return
			}
		default:
			err := res.err
			if retryable(err) {
				err = fmt.Errorf("%w: %v", kernel.ErrConflict, err)
			} else {
				s.setHealth(err)
				err = fmt.Errorf("%w: %v", kernel.ErrUnavailable, err)
			}
			for _, o := range live {
				o.done <- err
			}
			return
		}
	}
}

// batchResult is one transaction's outcome.
type batchResult struct {
	err      error   // the transaction failed: nothing of it committed (or, at COMMIT, maybe it did)
	culprit  int     // the function whose read aborted the transaction, or -1
	opErr    []error // per function, when err is nil
	appended []*kernel.Appended
}

// runBatch runs the functions of live in one transaction.
func (s *Store) runBatch(live []*op) batchResult {
	ctx, cancel := context.WithTimeout(s.bg, CommitTimeout)
	defer cancel()
	res := batchResult{culprit: -1, opErr: make([]error, len(live))}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		res.err = err
		return res
	}
	defer tx.Rollback(context.Background()) // a no-op after Commit
	w := newWriteTx(ctx, s, tx)
	for i, o := range live {
		w.begin()
		err := runOp(o, w)
		if w.dbErr != nil {
			res.err, res.culprit = w.dbErr, i
			return res
		}
		if err == nil {
			// A receipt that cannot be signed fails its own decision, not
			// the batch.
			for _, a := range w.op.receipts {
				if err = receipt.Validate(a.Receipt); err == nil && !textKey(a.Receipt.ID) {
					err = fmt.Errorf("%w: receipt id %q", errBadKey, a.Receipt.ID)
				}
				if err != nil {
					break
				}
			}
		}
		if err != nil {
			w.drop()
			res.opErr[i] = err
			continue
		}
		w.keep()
	}
	if w.empty() {
		return res // nothing to write: the rollback releases the row locks
	}
	if res.appended, err = w.flush(); err != nil {
		res.err = err
		return res
	}
	if err := tx.Commit(ctx); err != nil {
		res.err = fmt.Errorf("commit: %w", err)
		return res
	}
	return res
}

// runOp isolates a panicking function: it fails alone, closed.
func runOp(o *op, w *writeTx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pgstore: update function panicked: %v", r)
		}
	}()
	if err := o.ctx.Err(); err != nil {
		return err
	}
	return o.fn(w)
}
