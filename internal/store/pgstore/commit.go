package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// commitLoop is one committer: it takes everything queued (up to MaxBatch)
// and commits it as one transaction, until Close; then it drains.
func (s *Store) commitLoop() {
	defer s.wg.Done()
	batch := make([]*op, 0, MaxBatch)
	for {
		var ok bool
		if batch, ok = s.queue.Next(batch, MaxBatch); !ok {
			return
		}
		s.commit(batch)
	}
}

// commit runs batch as one transaction and answers every caller. A
// function's own failure is its answer alone. A transaction that lost a
// race is run again; if it keeps losing, each function gets a transaction
// of its own, so one function that cannot commit fails alone.
func (s *Store) commit(batch []*op) { s.commitGroup(batch, time.Now()) }

// commitGroup is commit's work, started at start. Observe hears of each
// transaction that committed calls, before their callers are answered
// (as bbolt's does), and counts only those calls: a transaction the
// database refused, or a function that failed, is no commit in /metrics.
func (s *Store) commitGroup(live []*op, start time.Time) {
	for attempt := 0; ; attempt++ {
		res := s.runBatch(live)
		switch {
		case res.err == nil:
			s.setHealth(nil)
			if n := committed(res.opErr); n > 0 && s.opts.Observe != nil {
				s.opts.Observe(n, time.Since(start))
			}
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
				s.commitGroup([]*op{o}, time.Now())
			}
			return
		case errors.Is(res.err, ErrSchemaTooNew) || errors.Is(res.err, ErrLogForked):
			// Nothing of it was sent past the version read (schema_fence.go)
			// or the log tip's check (logfeed.go), and no COMMIT: certainly
			// not committed, and no retry can help.
			err := fmt.Errorf("%w (%w): %w", kernel.ErrUnavailable, kernel.ErrNotCommitted, res.err)
			for _, o := range live {
				o.done <- err
			}
			return
		case res.culprit >= 0 && pgCode(res.err) != "" && !retryable(res.err):
			// One function's statement failed in the database (aborting the
			// transaction): it fails alone, the rest run again.
			live[res.culprit].done <- fmt.Errorf("%w (%w): %v", kernel.ErrUnavailable, kernel.ErrNotCommitted, res.err)
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
				if res.atCommit {
					err = fmt.Errorf("%w: %v", kernel.ErrUnavailable, err) // it may have committed
				} else {
					err = fmt.Errorf("%w (%w): %v", kernel.ErrUnavailable, kernel.ErrNotCommitted, err)
				}
			}
			for _, o := range live {
				o.done <- err
			}
			return
		}
	}
}

// committed counts the functions of a committed transaction that did not
// fail alone.
func committed(opErr []error) int {
	n := 0
	for _, err := range opErr {
		if err == nil {
			n++
		}
	}
	return n
}

// batchResult is one transaction's outcome.
type batchResult struct {
	err      error   // the transaction failed: nothing of it committed (or, at COMMIT, maybe it did)
	atCommit bool    // err came after a round trip holding COMMIT was sent: it may have committed
	culprit  int     // the function whose read aborted the transaction, or -1
	opErr    []error // per function, when err is nil
	appended []*kernel.Appended
}

// runBatch runs the functions of live in one transaction: all at once, then
// again one by one for those that read what an earlier one wrote (batch.go).
func (s *Store) runBatch(live []*op) (res batchResult) {
	ctx, cancel := context.WithTimeout(s.bg, CommitTimeout)
	defer cancel()
	res = batchResult{culprit: -1, opErr: make([]error, len(live))}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		res.err = err
		return res
	}
	b := newBatchTx(ctx, s, conn)
	defer b.end()
	// Unless the COMMIT's own round trip was sent (and maybe reached the
	// server: pgconn.SafeToRetry says when nothing of it was written),
	// a failure wrote nothing.
	defer func() { res.atCommit = res.err != nil && b.commitSent && !pgconn.SafeToRetry(res.err) }()
	var views []*fnTx
	var errs []error
	if len(live) == 1 {
		views, errs = []*fnTx{newFnTx(b, 0, nil)}, make([]error, 1)
		errs[0] = runOp(live[0], views[0])
	} else {
		views, errs = b.runConcurrent(live)
	}
	if err := b.aborted(); err != nil {
		res.err, res.culprit = err, b.culprit
		return res
	}
	written, kinds := map[string]bool{}, map[byte]bool{}
	keep := func(i int, f *fnTx, err error) {
		if err == nil {
			err = signable(f.layer.receipts)
		}
		if err != nil {
			res.opErr[i] = err // fails alone: its layer is dropped
			return
		}
		f.layer.writes(func(k string) { written[k], kinds[k[0]] = true, true })
		b.base.merge(f.layer)
	}
	var rerun []int
	for i, f := range views {
		if conflicts(f.reads, written, kinds) {
			rerun = append(rerun, i) // it saw the state before an earlier function's write
			continue
		}
		keep(i, f, errs[i])
	}
	for _, i := range rerun {
		f := newFnTx(b, i, nil)
		err := runOp(live[i], f)
		if err := b.aborted(); err != nil {
			res.err, res.culprit = err, b.culprit
			return res
		}
		keep(i, f, err)
	}
	if err := b.checkSchema(); err != nil {
		res.err = err // a newer build migrated the database: write nothing
		return res
	}
	if b.base.empty() {
		return res // nothing to write: the rollback releases the row locks
	}
	if res.appended, err = b.flush(); err != nil {
		res.err = err
		return res
	}
	return res
}

// end rolls back a transaction that did not commit (releasing its row
// locks) and returns the connection; one that cannot roll back is closed
// by the pool, which the server takes as a rollback.
func (b *batchTx) end() {
	if b.begun && !b.committed {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = b.conn.Exec(ctx, "ROLLBACK")
		cancel()
	}
	b.conn.Release()
}

// conflicts reports whether a function read a key (or scanned a kind) that
// kept functions wrote.
func conflicts(reads, written map[string]bool, kinds map[byte]bool) bool {
	for k := range reads {
		if len(k) == 1 && kinds[k[0]] || len(k) > 1 && written[k] {
			return true
		}
	}
	return false
}

// signable checks a function's receipts: one that cannot be signed fails
// its own decision, not the batch.
func signable(rs []*kernel.Appended) error {
	for _, a := range rs {
		if err := receipt.Validate(a.Receipt); err != nil {
			return err
		}
		if !textKey(a.Receipt.ID) {
			return fmt.Errorf("%w: receipt id %q", errBadKey, a.Receipt.ID)
		}
	}
	return nil
}

// runOp isolates a panicking function: it fails alone, closed.
func runOp(o *op, w *fnTx) (err error) {
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
