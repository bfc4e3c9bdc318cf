package boltstore

// The committer: group commit of queued store calls, receipt signing
// and the receipts' storage.

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// CommitStats describe one durable group commit.
type CommitStats struct {
	Calls int           // Update calls it carried
	Total time.Duration // from taking the first call to durable, fsyncs included
	// Where the committer's time went. The rest of Total is the gaps
	// between (mostly waiting for a CPU) and any attempt rebuilt without
	// a function that failed.
	Run      time.Duration // the calls' functions, reads and writes included
	Sign     time.Duration // signing the receipts (the committer and its helpers)
	Receipts time.Duration // storing the receipts, leaf hashes and (when due) index entries
	Write    time.Duration // bbolt's commit: page writes and both fsyncs
}

func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]*op, 0, MaxBatch)
	for {
		var ok bool
		// After Close, Next drains what was accepted before: it is committed.
		if batch, ok = s.queue.Next(batch, MaxBatch); !ok {
			return
		}
		s.commit(batch)
	}
}

// commit runs batch in one transaction, together with whatever is queued
// while that transaction is being built (for at most Options.AbsorbWindow): callers
// released by the previous commit then join this one instead of waiting a
// whole commit for the next. Receipts are signed in rounds as their
// functions finish, by the committer and GOMAXPROCS-1 helpers. A function
// that fails, or whose receipt cannot be signed, is answered with its error
// and the transaction is rebuilt without it, because bbolt has no savepoints
// and its partial writes must not reach the disk.
func (s *Store) commit(batch []*op) {
	start := time.Now()
	if e := s.failed.Load(); e != nil {
		for _, o := range batch {
			o.done <- fmt.Errorf("%w (%w): %v", kernel.ErrUnavailable, kernel.ErrNotCommitted, *e)
		}
		return
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	live := batch
	for {
		var st CommitStats // a rebuilt transaction starts over
		btx, err := s.db.Begin(true)
		if err != nil {
			s.fail(live, err)
			return
		}
		t := &tx{btx: btx, s: s, last: s.lastSeq.Load(), writable: true}
		var owner []int // index in live of the function that appended each receipt
		ran, failedAt := 0, -1
		var ferr error
		for {
			t0 := time.Now()
			for ; ran < len(live); ran++ {
				mark := len(t.appended)
				if ferr = runOp(live[ran], t); ferr != nil {
					t.appended = t.appended[:mark]
					failedAt = ran
					break
				}
				for range t.appended[mark:] {
					owner = append(owner, ran)
				}
			}
			t1 := time.Now()
			st.Run += t1.Sub(t0)
			if failedAt >= 0 {
				break
			}
			// A receipt that cannot be signed fails its own function, not
			// the batch (and never poisons the store).
			i, err := s.signReceipts(t)
			st.Sign += time.Since(t1)
			if err != nil {
				failedAt, ferr = owner[i], err
				break
			}
			if len(live) >= MaxBatch || time.Since(start) >= s.opts.AbsorbWindow {
				break
			}
			if live = s.queue.Absorb(live, MaxBatch); ran == len(live) {
				break
			}
		}
		if failedAt >= 0 {
			btx.Rollback()
			live[failedAt].done <- ferr
			live = append(live[:failedAt:failedAt], live[failedAt+1:]...)
			if len(live) == 0 {
				return
			}
			continue
		}
		t2 := time.Now()
		s.packCalls(t)
		if err := s.writeReceipts(t); err != nil {
			btx.Rollback()
			s.fail(live, err)
			return
		}
		t3 := time.Now()
		txid := uint64(btx.ID())
		if err := btx.Commit(); err != nil {
			s.fail(live, err)
			return
		}
		if s.afterWrite != nil {
			s.afterWrite()
		}
		s.durable.advance(txid) // before anything that may read
		st.Receipts, st.Write = t3.Sub(t2), time.Since(t3)
		s.lastSeq.Store(t.last)
		s.committedIndex(t)
		if s.opts.Log != nil && len(t.leaves) > 0 {
			s.opts.Log.Append(t.appended[0].Receipt.Seq, t.leaves)
		}
		if s.opts.OnCommit != nil && len(t.appended) > 0 {
			s.opts.OnCommit(t.appended)
		}
		if s.opts.Observe != nil {
			st.Calls, st.Total = len(live), time.Since(start)
			s.opts.Observe(st)
		}
		for _, o := range live {
			o.done <- nil
		}
		return
	}
}

// runOp isolates a panicking function: it fails alone, closed.
func runOp(o *op, t *tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("boltstore: update function panicked: %v", r)
		}
	}()
	if err := o.ctx.Err(); err != nil {
		return err
	}
	return o.fn(t)
}

// signReceipts signs the transaction's receipts appended since the last
// call (their seqs are fixed, so the bytes do not depend on scheduling).
// The committer signs too, taking receipts one at a time from a shared
// index, with up to GOMAXPROCS-1 helpers: under load a helper may queue
// behind busy callers for a CPU, while the committer already holds one. On
// failure it returns the index of a receipt that could not be signed.
func (s *Store) signReceipts(t *tx) (int, error) {
	from, n := t.signed, len(t.appended)
	if from == n {
		return 0, nil
	}
	errs := make([]error, n-from)
	var next atomic.Int64
	next.Store(int64(from))
	sign := func() {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			a := t.appended[i]
			a.Raw, errs[i-from] = receipt.Sign(s.key, a.Receipt)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), (n-from+3)/4) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sign()
		}()
	}
	sign()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return from + i, err
		}
	}
	t.signed = n
	return 0, nil
}

// writeReceipts stores the transaction's signed receipts and their leaf
// hashes, and indexes them when the index is due (index.go).
func (s *Store) writeReceipts(t *tx) error {
	n := len(t.appended)
	if n == 0 {
		return s.indexTail(t)
	}
	rb, ib, lb := t.btx.Bucket(bucketReceipts), t.btx.Bucket(bucketReceiptIDs), t.btx.Bucket(bucketLeaves)
	// Seq keys only grow, and so, almost, do receipt ids ("rc-" + UUIDv7).
	rb.FillPercent, lb.FillPercent, ib.FillPercent = appendFill, appendFill, appendFill
	t.leaves = make([][32]byte, 0, n)
	for _, a := range t.appended {
		k := seqKey(a.Receipt.Seq)
		leaf := receiptLeaf(a.Raw)
		t.leaves = append(t.leaves, leaf)
		if err := rb.Put(k, a.Raw); err != nil {
			return err
		}
		if err := ib.Put([]byte(a.Receipt.ID), k); err != nil {
			return err
		}
		if err := lb.Put(k, leaf[:]); err != nil {
			return err
		}
	}
	return s.indexTail(t)
}

// receiptLeaf is RFC 6962's leaf hash over the stored bytes.
func receiptLeaf(raw []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(raw)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func (s *Store) fail(batch []*op, err error) {
	e := fmt.Errorf("commit failed: %w", err)
	if s.failed.CompareAndSwap(nil, &e) {
		go s.heal()
	}
	s.durable.wake() // a reader waiting on this commit fails
	for _, o := range batch {
		o.done <- fmt.Errorf("%w: %v", kernel.ErrUnavailable, e)
	}
}
