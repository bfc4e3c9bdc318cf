package kernel

// Votes whose commit answer was lost. A vote's commit can land while its
// answer never arrives (a PostgreSQL COMMIT whose connection is cut, an
// fsync error after the write): recordVote then answers VoteUncertainError
// and publishes nothing. An approving vote's call is finished by the sweep
// (uncertainCalls), whose resume announces the resolution. A denial, or a
// vote that leaves the quorum unmet, leaves nothing for recovery to do, so
// without this list its news would never be told: channels would keep
// showing a live request with its buttons, live views a pending request,
// and a long-poll on the call (chio await) would wait out its whole wait.
//
// Such a vote is kept here (token id → lostVote). Whichever path first
// learns from the store that it committed tells what recordVote would have
// told after its commit, once: the replica sweep (tellLostVotes), the heal
// after a failed commit, or a later vote on the request refused because it
// was decided or already voted on (tellLostVotesOn). A vote found not
// recorded never committed: it is dropped and nothing is told. Nothing
// here writes to the store, and nothing here can run a call.

import (
	"errors"
	"slices"

	"github.com/chiokernel/chio/approval"
)

// lostVote is a vote whose commit may be durable: the request it was cast
// on, and whether its commit would have denied it (else it only counted).
type lostVote struct {
	approvalID string
	denies     bool
}

// keepLostVote lists the vote tokenID on approvalID, whose commit may be
// durable, when that commit would have left the request wouldBe denied or
// pending (an approving vote's call is uncertainCalls' to finish).
func (k *Kernel) keepLostVote(approvalID, tokenID, wouldBe string) {
	if wouldBe == approval.StatusDenied || wouldBe == approval.StatusPending {
		k.lostVotes.Store(tokenID, lostVote{approvalID: approvalID, denies: wouldBe == approval.StatusDenied})
	}
}

// tellLostVotes tells every listed vote found recorded.
func (k *Kernel) tellLostVotes() {
	k.lostVotes.Range(func(tokenID, v any) bool {
		k.tellLostVote(tokenID.(string), v.(lostVote))
		return true
	})
}

// tellLostVotesOn tells the listed votes on approvalID found recorded: a
// vote on it was refused in a way that the store has moved on (the token
// spent, the request decided, the approver counted), which a lost vote may
// explain.
func (k *Kernel) tellLostVotesOn(approvalID string) {
	k.lostVotes.Range(func(tokenID, v any) bool {
		if v.(lostVote).approvalID == approvalID {
			k.tellLostVote(tokenID.(string), v.(lostVote))
		}
		return true
	})
}

// tellLostVote reads the request and, if the vote tokenID is among its
// votes, publishes what recordVote publishes after such a vote's commit.
// The entry is taken from the list by exactly one caller, which alone
// publishes. A read that fails leaves the entry for the next look.
func (k *Kernel) tellLostVote(tokenID string, v lostVote) {
	req, err := k.Approval(v.approvalID)
	if errors.Is(err, ErrNotFound) {
		k.lostVotes.CompareAndDelete(tokenID, v)
		return
	}
	if err != nil {
		return
	}
	recorded := slices.ContainsFunc(req.Votes, func(x approval.Vote) bool { return x.TokenID == tokenID })
	// A vote commits with what it decided, in one transaction: recorded, a
	// vote whose commit denies left the request denied (its resolution
	// names the deciding denial, which is an earlier one when this vote
	// approved under a lowered deny_quorum its denials already met).
	denied := v.denies && req.Status == approval.StatusDenied
	var rec *CallRecord
	if recorded && denied {
		if rec, err = k.storedCall(req.RequestID); err != nil {
			return // looked at again: the denial is told with its call
		}
	}
	if !k.lostVotes.CompareAndDelete(tokenID, v) || !recorded {
		return // told by another path, or never committed: nothing to tell
	}
	switch {
	case denied:
		// As recordVote after a denying vote's commit.
		k.stopTimer(v.approvalID)
		k.announce(EventApprovalResolved, req)
		k.events.publish(Event{Type: EventCallCompleted, Call: OutcomeOf(rec)})
	case !v.denies && req.Status == approval.StatusPending:
		// It counted without deciding: progress, for live views only. The
		// request as it is now holds the vote (and any counted since).
		k.events.publish(Event{Type: EventApprovalRequested, Approval: req})
	}
	// Otherwise a later vote, a deadline or a reload resolved the request
	// and told of it: the progress is moot.
}
