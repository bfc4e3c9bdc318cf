package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A failed commit (disk full, EIO) makes the store refuse every write: after
// an fsync error nothing in the page cache can be trusted to be durable, and
// no decision may be acknowledged, so no call may be dispatched. The store
// does not stay down for good: it tries, every HealInterval, to close the
// file, reopen it (bbolt then reads its last durable meta page), and commit
// a probe transaction. When that works the store accepts writes again,
// Ready reports healthy, and OnHeal lets the kernel finish the calls the
// failure left in flight.

var bucketProbe = []byte("probe") // one key, rewritten by each heal probe

// Ready reports whether the store can commit: nil when it can, the error
// that stopped it otherwise (GET /readyz answers 503 with it).
func (s *Store) Ready() error {
	if e := s.failed.Load(); e != nil {
		return fmt.Errorf("store cannot commit (healing): %w", *e)
	}
	if s.queue.Closed() {
		return errors.New("store closed")
	}
	return nil
}

// heal runs after the first failed commit until the store reopens cleanly
// or closes.
func (s *Store) heal() {
	for {
		select {
		case <-s.queue.Closing():
			return
		case <-time.After(s.opts.HealInterval):
		}
		if err := s.reopen(); err != nil {
			slog.Warn("store still cannot commit; retrying", "err", err, "in", s.opts.HealInterval)
			continue
		}
		s.failed.Store(nil)
		slog.Info("store healed: writes accepted again")
		if s.opts.OnHeal != nil {
			s.opts.OnHeal()
		}
		return
	}
}

// reopen closes and reopens the file, catches the in-memory sequence and
// Merkle log up with what is durable, and proves a write works.
func (s *Store) reopen() error {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	select {
	case <-s.queue.Closing():
		return errors.New("store closing")
	default:
	}
	_ = s.db.Close() // a failed close changes nothing: we reopen anyway
	db, err := openDB(s.path, s.opts)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	s.db = db
	// What the reopened file holds is what is durable. A commit reported as
	// failed may still have reached the disk (its meta page was written but
	// its sync failed): its receipts are then part of the log, and its
	// decisions stand (the callers were answered 503 and dispatched
	// nothing; recovery finishes those calls).
	var last uint64
	var leaves [][32]byte
	from := s.lastSeq.Load() + 1
	err = db.View(func(btx *bolt.Tx) error {
		if k, _ := btx.Bucket(bucketReceipts).Cursor().Last(); k != nil {
			last = binary.BigEndian.Uint64(k)
		}
		c := btx.Bucket(bucketLeaves).Cursor()
		for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
			var l [32]byte
			copy(l[:], v)
			leaves = append(leaves, l)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read after reopen: %w", err)
	}
	if last < s.lastSeq.Load() {
		return fmt.Errorf("reopened store ends at seq %d, before the %d acknowledged: refusing to continue", last, s.lastSeq.Load())
	}
	if err := db.Update(func(btx *bolt.Tx) error {
		// The file at the path may not be the one opened at Open (a copy
		// restored over it meanwhile): it must be this kernel key's, as
		// Open requires (kernelkey.go), before anything is written to it.
		if _, err := btx.CreateBucketIfNotExists(bucketMeta); err != nil {
			return err
		}
		if err := checkFormat(btx, s.path); err != nil {
			return err
		}
		if err := checkKernelKey(btx, s.path, s.key.Public()); err != nil {
			return err
		}
		b, err := btx.CreateBucketIfNotExists(bucketProbe)
		if err != nil {
			return err
		}
		return b.Put([]byte("heal"), seqKey(uint64(time.Now().UnixNano())))
	}); err != nil {
		return fmt.Errorf("probe commit: %w", err)
	}
	// The receipts the failed commits left unindexed are on disk (or were
	// never committed): index from what is durable, and start over.
	if err := catchUp(db); err != nil {
		return fmt.Errorf("index after reopen: %w", err)
	}
	s.unindexed = s.unindexed[:0]
	if len(leaves) > 0 && s.opts.Log != nil {
		s.opts.Log.Append(from, leaves)
	}
	// What the reopened file holds is durable; a reader that saw the failed
	// commit's meta page was refused (durable.go).
	txid, err := currentTxID(db)
	if err != nil {
		return fmt.Errorf("read after reopen: %w", err)
	}
	s.durable.reset(txid)
	s.lastSeq.Store(last)
	s.indexed.Store(last)
	return nil
}
