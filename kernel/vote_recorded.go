package kernel

import (
	"errors"
	"fmt"
)

// ErrVoteRecorded matches an error Respond returns AFTER the vote's own
// commit succeeded: the vote is durable (counted, its token spent, the
// request approved), and only a later step failed — the commit that runs
// or denies the approved call, its delivery, or the commit of its outcome.
// A channel must then tell the approver their vote IS recorded: "not
// recorded, try again" would send them, or a second approver, to vote
// again on a decision already taken (and presenting the same token again
// is refused as a replay). The call itself is finished by recovery (when
// the store heals, or at the next start; on a store shared by replicas, by
// the replica's sweep) if the failing step did not.
//
// Errors from before or at the vote's commit never match it: then the
// vote was not recorded (or, for a commit whose outcome the store could
// not confirm, is not known to be).
var ErrVoteRecorded = errors.New("your vote is recorded")

// VoteRecordedError is the error behind ErrVoteRecorded: the vote on
// ApprovalID is durable and Err is what failed after it. It matches
// ErrVoteRecorded and everything Err matches (ErrOutcomeUnknown when the
// approved call may have run, ErrUnavailable for a store failure).
type VoteRecordedError struct {
	ApprovalID string
	Err        error
}

func (e *VoteRecordedError) Error() string {
	return fmt.Sprintf("your vote on %s is recorded and approved it, but the approved call is not finished yet "+
		"(chio finishes it once its store recovers; do not vote again): %v", e.ApprovalID, e.Err)
}

func (e *VoteRecordedError) Unwrap() []error { return []error{ErrVoteRecorded, e.Err} }

// ErrVoteUncertain matches an error Respond returns when the vote's OWN
// commit failed in a way that may still have reached the disk (an fsync
// error; a PostgreSQL COMMIT whose answer was lost): the vote may or may
// not be recorded, and nobody can tell until the store is read again.
// Channels must say exactly that, never "not recorded". Presenting the
// vote again is safe and settles the question: a vote already recorded is
// refused as a replay or a second vote of the same approver.
var ErrVoteUncertain = errors.New("your vote may or may not be recorded")

// VoteUncertainError is the error behind ErrVoteUncertain: Err is the
// store's failure (it matches ErrUnavailable; the API answers it 503 with a
// code of its own, vote_uncertain, never "unavailable": presenting the same
// token again is the right next step).
type VoteUncertainError struct {
	ApprovalID string
	Err        error
}

func (e *VoteUncertainError) Error() string {
	return fmt.Sprintf("your vote on %s may or may not be recorded: the store failed while committing it (%v); "+
		"present it again: a vote already recorded is refused as such, never counted twice", e.ApprovalID, e.Err)
}

func (e *VoteUncertainError) Unwrap() []error { return []error{ErrVoteUncertain, e.Err} }
