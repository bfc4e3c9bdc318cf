package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chiokernel/chio/receipt"
)

var _ receipt.CheckpointStore = (*Store)(nil)

// ReceiptLog returns the Merkle log the store feeds (Options.Log), or nil.
func (s *Store) ReceiptLog() *receipt.Log { return s.opts.Log }

// PutCheckpoint stores a signed checkpoint. Replicas sign checkpoints of
// the one tree with the one kernel key, so two of the same size must have
// the same root: the first stored stands, and one with another root is a
// forked log, refused. A replica a newer schema fenced stores none: the
// insert is made behind the schema fence (behindFence).
func (s *Store) PutCheckpoint(ctx context.Context, size uint64, raw []byte) error {
	tag, err := s.insertCheckpoint(ctx, size, raw)
	if err != nil {
		return fmt.Errorf("pgstore: checkpoint %d: %w", size, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var stored []byte
	if err := s.pool.QueryRow(ctx, "SELECT raw FROM chio_checkpoints WHERE tree_size = $1", int64(size)).Scan(&stored); err != nil {
		return fmt.Errorf("pgstore: checkpoint %d: %w", size, err)
	}
	if bytes.Equal(stored, raw) {
		return nil
	}
	mine, err1 := receipt.VerifyCheckpoint(raw, s.key.Public())
	theirs, err2 := receipt.VerifyCheckpoint(stored, s.key.Public())
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%w: checkpoint %d: %w", receipt.ErrLogCorrupt, size, err)
	}
	if mine.RootHash != theirs.RootHash {
		return fmt.Errorf("%w: two checkpoints of size %d with different roots (%s stored, %s signed here)",
			receipt.ErrLogCorrupt, size, theirs.RootHash, mine.RootHash)
	}
	return nil
}

// LatestCheckpoint returns the stored checkpoint of the largest size. The
// Log checks it against its tree, so the Log is first brought up to that
// size (another replica may have signed it after this one's last feed).
func (s *Store) LatestCheckpoint() ([]byte, error) {
	ctx, cancel := context.WithTimeout(s.bg, ReadTimeout)
	defer cancel()
	var size int64
	var raw []byte
	err := s.pool.QueryRow(ctx, "SELECT tree_size, raw FROM chio_checkpoints ORDER BY tree_size DESC LIMIT 1").Scan(&size, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.opts.Log != nil {
		s.logMu.Lock()
		err = s.catchUp(ctx, uint64(size))
		s.logMu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// Checkpoints visits stored checkpoints with tree_size ≥ from, ascending.
func (s *Store) Checkpoints(from uint64, fn func(size uint64, raw []byte) bool) error {
	ctx, cancel := context.WithTimeout(s.bg, ReadTimeout)
	defer cancel()
	next := int64(from)
	for {
		rows, err := s.pool.Query(ctx, "SELECT tree_size, raw FROM chio_checkpoints WHERE tree_size >= $1 ORDER BY tree_size LIMIT $2",
			next, ScanChunk)
		if err != nil {
			return err
		}
		type cp struct {
			size int64
			raw  []byte
		}
		var page []cp
		for rows.Next() {
			var c cp
			if err := rows.Scan(&c.size, &c.raw); err != nil {
				rows.Close()
				return err
			}
			page = append(page, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, c := range page {
			if !fn(uint64(c.size), c.raw) {
				return nil
			}
		}
		if len(page) < ScanChunk {
			return nil
		}
		next = page[len(page)-1].size + 1
	}
}

// insertCheckpoint inserts the checkpoint unless one of its size is
// stored, behind the schema fence (behindFence), and only if the database
// still holds the tree it was signed over: the Log's tip, which is set
// before its leaves are appended, so it covers every size the Log signed
// (logfeed.go). A checkpoint beyond a head that moved back would make
// every replica refuse to start.
func (s *Store) insertCheckpoint(ctx context.Context, size uint64, raw []byte) (tag pgconn.CommandTag, err error) {
	err = s.behindFence(ctx, func(tx pgx.Tx) error {
		if tip := s.tip.Load(); tip != nil {
			var head int64
			var leaf []byte
			if err := tx.QueryRow(ctx, tipRead, int64(tip.size)).Scan(&head, &leaf); err != nil {
				return err
			}
			if err := s.holds(tip, head, leaf); err != nil {
				return err
			}
		}
		tag, err = tx.Exec(ctx, "INSERT INTO chio_checkpoints (tree_size, raw) VALUES ($1, $2) ON CONFLICT (tree_size) DO NOTHING",
			int64(size), raw)
		return err
	})
	return tag, err
}
