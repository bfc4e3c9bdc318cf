package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// ArrivalBound is how long a vote's arrival record holds off the deadlines
// of other replicas at most: one left behind (its removal failed, its
// replica stalled) delays a deadline by this much, never forever. A vote
// whose commit has not started by then is refused or overtaken as before.
const ArrivalBound = time.Minute

// ArriveVote implements kernel.SharedArrivals.
func (s *Store) ArriveVote(ctx context.Context, approvalID string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO chio_vote_arrivals (approval_id, replica, created_ms)
		VALUES ($1, $2, `+dbNowMS+`) RETURNING id`, approvalID, s.id).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("%w: record the vote's arrival: %v", kernel.ErrUnavailable, err)
	}
	return id, nil
}

// ArrivedAt implements kernel.SharedArrivals.
func (s *Store) ArrivedAt(ctx context.Context, arrival, at int64) error {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE chio_vote_arrivals SET at = $2 WHERE id = $1`, arrival, at); err != nil {
		return fmt.Errorf("%w: record the vote's arrival time: %v", kernel.ErrUnavailable, err)
	}
	return nil
}

// EndArrival implements kernel.SharedArrivals. A removal that fails leaves
// the record to ArrivalBound (and prune).
func (s *Store) EndArrival(ctx context.Context, arrival int64) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	_, _ = s.pool.Exec(ctx, `DELETE FROM chio_vote_arrivals WHERE id = $1`, arrival)
}

// VotesArriving implements kernel.SharedArrivals: records of live
// replicas, younger than ArrivalBound, without a reading or read before
// deadline.
func (s *Store) VotesArriving(ctx context.Context, approvalID string, deadline int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	var arriving bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chio_vote_arrivals a
		WHERE a.approval_id = $1 AND (a.at IS NULL OR a.at < $2) AND a.created_ms >= `+dbNowMS+` - $3
			AND EXISTS (SELECT 1 FROM chio_replicas r WHERE r.id = a.replica AND r.heartbeat_ms >= `+dbNowMS+` - $4))`,
		approvalID, deadline, ArrivalBound.Milliseconds(), s.opts.Lease.Milliseconds()).Scan(&arriving)
	if err != nil {
		return false, fmt.Errorf("%w: read the votes arriving: %v", kernel.ErrUnavailable, err)
	}
	return arriving, nil
}
