package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// One log across replicas. Receipts are numbered under the lock of
// chio_log_head inside the committing transaction, so once a transaction
// holding seqs [a, b] has committed, every seq below a is committed too
// (its transaction held the lock before, and released it by committing).
// Each replica's receipt.Log must hold exactly leaves 1..n in that order:
// after its own commit it first reads the leaves it has not seen from the
// database, then appends its own; other replicas' commits are read when
// their NOTIFY arrives, and at least every FollowInterval in case one was
// missed. The Log refuses any append that is not contiguous (it would then
// prove nothing), so every feed runs under logMu.
//
// The database's log must only grow. One whose head moved back under a
// running replica (a failover to an asynchronous standby, a restore from a
// backup) no longer holds the tree this replica signed checkpoints of, and
// the receipts it commits at the reused seqs would fork the signed log. So
// every feed first checks that the database still holds the Log's last
// leaf, at its seq (checkTip), and so does every commit that appends
// receipts, inside its transaction, under the log head's lock
// (queueTipCheck); if not, the store is fenced (schema_fence.go):
// it commits and stores checkpoints no more, and Ready says why, until a
// restart loads the log as the database now holds it.

// ErrLogForked: the database no longer holds the receipt log this replica
// holds (its log head moved back). The store is fenced until restarted.
var ErrLogForked = errors.New("pgstore: the database's receipt log moved back under this replica")

// loadLog fills the Log with every stored leaf, refusing a log with holes.
func (s *Store) loadLog(ctx context.Context) error {
	last, err := lastSeq(ctx, s.pool)
	if err != nil {
		return err
	}
	leaves := make([][32]byte, 0, last)
	if err := s.readLeaves(ctx, 1, last, func(l [32]byte) { leaves = append(leaves, l) }); err != nil {
		return err
	}
	if len(leaves) > 0 {
		s.setTip(uint64(len(leaves)), leaves[len(leaves)-1])
	}
	s.opts.Log.Load(leaves)
	return nil
}

// readLeaves reads the leaf hashes of seq from..to, which must all exist.
func (s *Store) readLeaves(ctx context.Context, from, to uint64, fn func([32]byte)) error {
	next := from
	for next <= to {
		rows, err := s.pool.Query(ctx, "SELECT seq, leaf FROM chio_receipts WHERE seq >= $1 AND seq <= $2 ORDER BY seq LIMIT $3",
			int64(next), int64(to), 50_000)
		if err != nil {
			return fmt.Errorf("pgstore: read leaves: %w", err)
		}
		got := 0
		for rows.Next() {
			var seq int64
			var leaf []byte
			if err := rows.Scan(&seq, &leaf); err != nil {
				rows.Close()
				return err
			}
			if uint64(seq) != next || len(leaf) != 32 {
				rows.Close()
				return fmt.Errorf("%w: leaf for seq %d found where seq %d was expected", receipt.ErrLogCorrupt, seq, next)
			}
			fn([32]byte(leaf))
			next++
			got++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if got == 0 {
			return fmt.Errorf("%w: no leaf for seq %d (the log head says %d)", receipt.ErrLogCorrupt, next, to)
		}
	}
	return nil
}

// catchUp appends to the Log every committed leaf up to seq to that it
// lacks. Call with logMu held.
func (s *Store) catchUp(ctx context.Context, to uint64) error {
	if err := s.checkTip(ctx); err != nil {
		return err
	}
	log := s.opts.Log
	from := log.Size() + 1
	if to < from {
		return nil
	}
	leaves := make([][32]byte, 0, to-from+1)
	if err := s.readLeaves(ctx, from, to, func(l [32]byte) { leaves = append(leaves, l) }); err != nil {
		return err
	}
	s.setTip(to, leaves[len(leaves)-1])
	log.Append(from, leaves)
	return nil
}

// tipRead reads the database's log head and its leaf at seq $1.
const tipRead = "SELECT (SELECT last_seq FROM chio_log_head WHERE id = 1), (SELECT leaf FROM chio_receipts WHERE seq = $1)"

// logTip is the Log's size and the leaf at that seq, its last.
type logTip struct {
	size uint64
	leaf [32]byte
}

// setTip records the Log's new tip, before the leaves are appended (so
// every size the Log can sign is covered by the tip: PutCheckpoint). Call
// with logMu held.
func (s *Store) setTip(size uint64, leaf [32]byte) { s.tip.Store(&logTip{size: size, leaf: leaf}) }

// checkTip makes sure the database still holds the Log's tree: its head is
// not behind the tree, and its leaf at the tree's last seq is the Log's. If
// not, it fences the store (logged at error level once) and returns
// ErrLogForked. Call with logMu held.
func (s *Store) checkTip(ctx context.Context) error {
	if e := s.stale.Load(); e != nil && errors.Is(*e, ErrLogForked) {
		return *e
	}
	tip := s.tip.Load()
	if tip == nil {
		return nil
	}
	var head int64
	var leaf []byte
	err := s.pool.QueryRow(ctx, tipRead, int64(tip.size)).Scan(&head, &leaf)
	if err != nil {
		return fmt.Errorf("pgstore: read log head: %w", err)
	}
	return s.holds(tip, head, leaf)
}

// queueTipCheck is checkTip inside a commit transaction that appends
// receipts: queued after the statement that advances (and so locks) the
// log head, it reads the leaf at the tree's last seq; the returned check,
// given the head before the advance, refuses the transaction (before its
// receipts and COMMIT are sent) if the database no longer holds the tree.
// So a replica's first commit after the log moved back is refused too, not
// only the ones after it noticed. Any tip since fed is a longer prefix of
// the same log: checking an earlier one is as good.
func (s *Store) queueTipCheck(batch *pgx.Batch) func(head int64) error {
	tip := s.tip.Load()
	if tip == nil {
		return func(int64) error { return nil }
	}
	var leaf []byte
	batch.Queue("SELECT (SELECT leaf FROM chio_receipts WHERE seq = $1)", int64(tip.size)).QueryRow(func(row pgx.Row) error {
		return row.Scan(&leaf)
	})
	return func(head int64) error { return s.holds(tip, head, leaf) }
}

// holds reports whether a database whose log head is head and whose leaf
// at tip's seq is leaf holds the tree ending at tip; if not, it fences the
// store and returns ErrLogForked.
func (s *Store) holds(tip *logTip, head int64, leaf []byte) error {
	if head >= 0 && uint64(head) >= tip.size && bytes.Equal(leaf, tip.leaf[:]) {
		return nil
	}
	err := fmt.Errorf("%w (%w): the database's log head is %d, this replica's tree holds %d receipts whose last (seq %d) the database "+
		"does not hold (a failover to an asynchronous standby, a restore from a backup?); it commits and signs nothing more: restart it",
		ErrLogForked, receipt.ErrLogCorrupt, head, tip.size, tip.size)
	if s.stale.CompareAndSwap(nil, &err) {
		slog.Error("receipt log: the database no longer holds this replica's log: refusing every commit and checkpoint from now on", "err", err)
	}
	return *s.stale.Load()
}

// fed feeds the Log this replica's just-committed receipts (seq order),
// after the others' receipts numbered before them.
func (s *Store) fed(appended []*kernel.Appended) {
	if s.opts.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	first := appended[0].Receipt.Seq
	ctx, cancel := context.WithTimeout(s.bg, CommitTimeout)
	defer cancel()
	if err := s.catchUp(ctx, first-1); err != nil {
		if errors.Is(err, ErrLogForked) {
			return // fenced: logged once (checkTip)
		}
		// The follower retries; the Log only lags meanwhile.
		slog.Warn("receipt log: catching up with other replicas failed; retrying", "err", err)
		return
	}
	size := s.opts.Log.Size()
	if size >= appended[len(appended)-1].Receipt.Seq || size != first-1 {
		return // the follower already read these from the database
	}
	leaves := make([][32]byte, len(appended))
	for i, a := range appended {
		leaves[i] = receipt.LeafHash(a.Raw)
	}
	s.setTip(first+uint64(len(leaves))-1, leaves[len(leaves)-1])
	s.opts.Log.Append(first, leaves)
}

// follow brings the Log up to the database's head: to a notified seq, or
// to the head itself (to = 0).
func (s *Store) follow(to uint64) {
	if s.opts.Log == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.bg, CommitTimeout)
	defer cancel()
	if to == 0 {
		var err error
		if to, err = lastSeq(ctx, s.pool); err != nil {
			return
		}
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if err := s.catchUp(ctx, to); err != nil && s.bg.Err() == nil && !errors.Is(err, ErrLogForked) {
		slog.Warn("receipt log: following other replicas failed; retrying", "err", err)
	}
}

// follower keeps the Log current when no notification arrives (a replica
// that only reads, a notification lost with a connection).
func (s *Store) follower() {
	defer s.bgWG.Done()
	t := time.NewTicker(FollowInterval)
	defer t.Stop()
	for {
		select {
		case <-s.bg.Done():
			return
		case <-t.C:
			s.follow(0)
		}
	}
}
