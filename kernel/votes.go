package kernel

// Votes: the one durable transition that records a human's (or the
// advisory timeout's) decision on an approval request, and the rules a
// vote must meet inside it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// sameAnswers refuses an approving answer to a question request that
// differs from an earlier approver's: a quorum of N means N people gave
// the same answers, not N answers of which the last is returned. Only the
// votes of keys in counted (those the policy in force trusts) bind: a
// vote recorded before a reload removed its key no longer counts, and no
// longer dictates the answer either. Counted answers disagree only once a
// reload trusts such a voter again (the answer given while they were
// removed beside theirs): an answer must then be one of those, never a
// third, and its quorum is counted among the approvals giving it
// (approval.Request.AgreeingWith); refusing every answer would leave the question
// unanswerable.
func sameAnswers(votes []approval.Vote, tok *approval.Token, counted []string) error {
	if tok == nil {
		return fmt.Errorf("%w: an answer needs its token", approval.ErrMalformedToken)
	}
	mine, err := canon.Canonicalize(tok.Answers)
	if err != nil {
		return fmt.Errorf("%w: answers: %v", approval.ErrMalformedToken, err)
	}
	var differs *approval.Vote // the first counted approval whose answers differ
	for i := range votes {
		v := &votes[i]
		if v.Decision != approval.DecisionApproved || !slices.Contains(counted, v.Approver) {
			continue
		}
		var earlier approval.Token
		if err := canon.Unmarshal(v.Token, &earlier); err != nil {
			return fmt.Errorf("%w: stored vote of %s unreadable", ErrConflict, v.Approver)
		}
		theirs, err := canon.Canonicalize(earlier.Answers)
		switch {
		case err == nil && bytes.Equal(mine, theirs):
			return nil
		case differs == nil:
			differs = v
		}
	}
	if differs != nil {
		return fmt.Errorf("%w: these answers differ from those %s gave; a quorum must give the same answers",
			approval.ErrMalformedToken, nameOr(differs.DisplayName, differs.Approver))
	}
	return nil
}

func (k *Kernel) displayName(req *approval.Request, key string) string {
	if g, ok := k.Policy().Grant(req.PolicyID); ok && g.Approval != nil {
		for _, ap := range g.Approval.Approvers {
			if ap.PublicKey.String() == key {
				return ap.DisplayName
			}
		}
	}
	return ""
}

// mayVoteNow re-judges, inside the vote's commit and against policy p in
// force there, the approver rules Respond checked with approval.Verify
// against the policy it read: a reload since may have removed approver's
// key (or its tier), made it a requester, or removed the grant. A vote
// refused here changes nothing: its token is not consumed.
func mayVoteNow(p *policy.Policy, req *approval.Request, approver string) error {
	trusted, requesters, ok := approversNow(p, req)
	switch {
	case !ok:
		return fmt.Errorf("%w: under the policy in force (reloaded since your token was checked) nobody may decide requests of grant %s",
			approval.ErrNoApprovers, req.PolicyID)
	case approver == req.SubjectID || approver == req.SubjectPublicKey:
		return approval.ErrSelfApproval
	case slices.Contains(requesters, approver):
		return fmt.Errorf("%w: under the policy in force (reloaded since your token was checked) the approver is a requester of grant %s",
			approval.ErrSelfApproval, req.PolicyID)
	case !slices.Contains(trusted, approver):
		return fmt.Errorf("%w: the policy in force (reloaded since your token was checked) no longer names this key as an approver of this request",
			approval.ErrUntrustedSigner)
	}
	return nil
}

// lastDenial returns the latest counted denial among votes (the deny path
// runs only when there is one).
func lastDenial(votes []approval.Vote, counted []string) *approval.Vote {
	for i := len(votes) - 1; i >= 0; i-- {
		if votes[i].Decision == approval.DecisionDenied && slices.Contains(counted, votes[i].Approver) {
			return &votes[i]
		}
	}
	return nil
}

// advisory reports whether vote is the kernel's own auto_approve_advisory
// vote (recorded only by the timeout path, signed by the kernel key).
func advisory(vote *approval.Vote, kernelKey string) bool {
	return vote.Approver == kernelKey && vote.Channel == ChannelTimeout
}

// recordVote is the one atomic, durable transition for a vote: consume the
// token, count the vote, and, if that resolves the request, move the call
// to dispatching (approved) or denied, all in one commit. Of two concurrent
// presentations exactly one commits; the other sees the token consumed or
// the request resolved.
//
// advisoryApplies is set only for the kernel's own advisory vote (the
// timeout path): it re-checks, inside this commit, that the advisory
// auto-approval still applies (timers.go). A kernel-key vote without it is
// refused.
func (k *Kernel) recordVote(ctx context.Context, approvalID string, vote approval.Vote, tok *approval.Token, now time.Time,
	advisoryApplies func(*policy.Policy, *approval.Request) error) (*RespondResult, error) {
	var final *approval.Request
	var rec *CallRecord
	var denyReceipt *receipt.Receipt
	// Registered from before the vote commits until its resume returns:
	// an approved call this vote leaves undecided in between is this live
	// path's to decide, never ownStranded's (live_votes.go).
	k.voting.enter(approvalID)
	defer k.voting.leave(approvalID)
	if hook := k.beforeVoteCommit.Swap(nil); hook != nil {
		(*hook)()
	}
	// The vote is judged by the policy in force when it commits, not the
	// one Respond verified the token against: a reload may have landed
	// since. Holding policyMu (read) from this read until the commit is
	// durable keeps any reload (SetPolicy) out of that interval, so p is
	// the policy in force at the commit (inforce.go). On a store shared by
	// replicas this holds per replica: each judges by its own policy in
	// force. (Only Update's enqueue-and-wait runs on this goroutine under
	// the lock; the function runs on the committer, which recovers panics.)
	k.policyMu.RLock()
	p := k.Policy()
	err := k.update(ctx, func(tx Tx) error {
		req, err := tx.Approval(approvalID)
		if err != nil {
			return err
		}
		if err := tx.Consume(vote.TokenID, approvalID); err != nil {
			return err
		}
		if req.Status != approval.StatusPending {
			return fmt.Errorf("%w: request is %s", ErrConflict, req.Status)
		}
		if req.HasVoted(vote.Approver) {
			return approval.ErrDuplicateVote
		}
		// Judged and counted at the tier req waits at under p: one p
		// leaves to nobody but the calling agent is passed over
		// (skip_tiers.go), as p's reconcile does, which may not have
		// reached req yet. It stays stored at its tier: the reconcile
		// moves it, arms the next tier's deadline and tells its approvers.
		at := atDecidingTier(p, req)
		if !advisory(&vote, k.pub.String()) {
			if err := mayVoteNow(p, at, vote.Approver); err != nil {
				return err // refused: nothing is written, the token is not spent
			}
		}
		if req.Kind == approval.KindQuestion && vote.Decision == approval.DecisionApproved {
			trusted, _, _ := approversNow(p, at)
			if err := sameAnswers(req.Votes, tok, trusted); err != nil {
				return err
			}
		}
		if vote.Approver == k.pub.String() {
			// The kernel's advisory vote, judged again by the policy read
			// inside this commit: a reload, a late announcement or a
			// person's denial since advisoryMayDecide checked wins.
			if !advisory(&vote, k.pub.String()) || advisoryApplies == nil {
				return fmt.Errorf("%w: a kernel-key vote outside the advisory timeout path", ErrConflict)
			}
			if err := advisoryApplies(p, req); err != nil {
				return err
			}
		}
		req.Votes = append(req.Votes, vote)
		// Votes count only while their keys are trusted by the policy in
		// force (the kernel's own advisory vote is the timeout path's), and
		// against the quorums in force, never looser than when parked.
		trusted, _, _ := approversNow(p, at)
		counted := append(trusted, k.pub.String())
		approved, denied := req.CountsAmong(counted)
		if req.Kind == approval.KindQuestion && vote.Decision == approval.DecisionApproved {
			// Only the approvals giving this vote's answers make its quorum
			// (counted ones disagree after a reload trusts a voter again:
			// sameAnswers).
			approved = req.AgreeingWith(counted, &vote)
		}
		req.Quorum, req.DenyQuorum = quorumsNow(p, req)
		if advisory(&vote, k.pub.String()) {
			// advisoryApplies checked, in this commit, that the deadline
			// passed with its approvers told and no denial: policy chose
			// this vote to decide. Quorum 1 holds for this commit only, which resolves
			// the call; a refused vote leaves the stored quorum as parked.
			req.Quorum = 1
		}
		if rec, err = tx.Call(req.RequestID); err != nil {
			return err
		}
		switch {
		case denied >= req.DenyQuorum:
			// The denials decide, even when this vote approves: the
			// deny_quorum in force (lowered by a reload whose reconcile has
			// not reached this request yet) is already met.
			by := lastDenial(req.Votes, counted)
			reason := by.Note
			if approval.Blank(reason) { // none, or one that shows as nothing: the note stays in metadata
				reason = "denied by " + nameOr(by.DisplayName, by.Approver)
			}
			req.Status = approval.StatusDenied
			denyReceipt = k.chainReceipt(rec, p, req, receipt.Decision{Verdict: receipt.Deny, Guard: GuardHumanApproval, Reason: reason}, by, now)
			// The resolution names the denial the receipt names (by), never
			// this vote, which may be an approval: GET /v1/calls/{id} reads
			// its token as who decided.
			req.Resolution = &approval.Resolution{Outcome: approval.StatusDenied, Reason: reason, At: now.Unix(), TokenID: by.TokenID,
				ReceiptID: denyReceipt.ID, Guard: GuardHumanApproval, DecidedBy: decidedBy(by), CallStatus: StatusDenied,
				Uncounted: receiptUncounted(denyReceipt)}
			rec.Status, rec.Guard, rec.Reason, rec.ReceiptID, rec.UpdatedAt = StatusDenied, GuardHumanApproval, reason, denyReceipt.ID, now.UnixMilli()
			tx.AppendReceipt(denyReceipt)
			if err := tx.PutCall(rec); err != nil {
				return err
			}
		case approved >= req.Quorum && vote.Decision == approval.DecisionApproved:
			// Only an approval decides an approval: a denial arriving when
			// the approvals already meet the quorum (a reload that trusts
			// an earlier voter again, whose reconcile has not resolved the
			// request yet: reload_resolve.go) is recorded and decides
			// nothing.
			req.Status = approval.StatusApproved
			// Uncounted as the allow receipt will name them (uncounted.go);
			// the commit that chains it writes them again, as it counts.
			req.Resolution = &approval.Resolution{Outcome: approval.StatusApproved, At: now.Unix(), TokenID: vote.TokenID,
				DecidedBy: decidedBy(&vote), Uncounted: k.uncountedVoters(p, req, &vote)}
			rec.Status = StatusDispatching
			rec.UpdatedAt = now.UnixMilli()
			if err := tx.PutCall(rec); err != nil {
				return err
			}
		case len(tok.AmendedArguments) > 0:
			// An amendment is the approval of ONE approver (Respond checks
			// quorum 1), so it must resolve the call now: a reload raising
			// the quorum meanwhile would otherwise count it toward a call
			// the others approve unamended. Refused, nothing is consumed.
			return fmt.Errorf("%w: amended_arguments need an approval that resolves the call (the quorum in force is %d)",
				approval.ErrAmendmentRefused, req.Quorum)
		}
		final = req
		return tx.PutApproval(req)
	})
	k.policyMu.RUnlock()
	if err != nil {
		if errors.Is(err, approval.ErrReplay) {
			k.consumed.Add(vote.TokenID, struct{}{})
		}
		if errors.Is(err, approval.ErrReplay) || errors.Is(err, approval.ErrDuplicateVote) || errors.Is(err, ErrConflict) {
			// The store moved on since this vote was verified: a vote on
			// the request whose answer was lost may be why.
			k.tellLostVotesOn(approvalID)
		}
		if mayHaveCommitted(err) {
			if _, shared := k.store.(Replicated); shared && final != nil && final.Status == approval.StatusApproved {
				// This vote would have approved the call: if its commit is
				// durable (only its answer was lost), the call waits
				// approved and undecided, owned by this live replica,
				// which no other replica takes over and no heal hook
				// recovers. The sweep resumes it while it is undecided
				// (uncertainCalls: a vote that never committed leaves the
				// call pending_approval and the entry is dropped).
				k.uncertain.LoadOrStore(final.RequestID, "")
			}
			if final != nil {
				// A denial or a counted vote, if durable, is told by
				// whichever path first reads it recorded (lost_votes.go).
				k.keepLostVote(approvalID, vote.TokenID, final.Status)
			}
			// The vote may be durable: never let a channel say "not
			// recorded" (vote_recorded.go).
			return nil, &VoteUncertainError{ApprovalID: approvalID, Err: err}
		}
		return nil, err
	}
	k.consumed.Add(vote.TokenID, struct{}{})
	// Told as the kernel decides: on a question only approvals giving the
	// same answers make a quorum, so a vote that leaves it open is told its
	// largest agreeing set, never every counted approval; a vote that
	// resolves it, the approvals its decision counts (Progress, less
	// Resolution.Uncounted: those its receipt names uncounted).
	trusted, _, _ := approversNow(p, final)
	approved := final.LeadingApprovals(append(trusted, k.pub.String()))
	if final.Status != approval.StatusPending {
		approved, _ = final.Progress()
	}
	res := &RespondResult{ApprovalID: approvalID, Outcome: approval.StatusPending, Approvals: approved, Quorum: final.Quorum}
	switch final.Status {
	case approval.StatusDenied:
		k.stopTimer(approvalID)
		res.Outcome, res.ResolvedAt, res.ReceiptID, res.Call = approval.StatusDenied, final.Resolution.At, final.Resolution.ReceiptID, OutcomeOf(rec)
		k.announce(EventApprovalResolved, final)
		k.events.publish(Event{Type: EventCallCompleted, Call: OutcomeOf(rec)})
	case approval.StatusApproved:
		k.stopTimer(approvalID)
		out, err := k.resume(ctx, final, rec, tok, &vote, now)
		if err != nil {
			if _, shared := k.store.(Replicated); shared {
				// The call may be left approved with no decision (a read
				// or commit before it failed). No other replica takes a
				// live replica's calls and no heal hook runs: this
				// replica's sweep resumes it while it is still undecided
				// (uncertainCalls; "" names no decision of ours). An entry
				// the decision's own failed commit made is kept.
				k.uncertain.LoadOrStore(final.RequestID, "")
			}
			// The vote committed above: whatever failed since, the vote is
			// recorded and the channel must say so (vote_recorded.go).
			return nil, &VoteRecordedError{ApprovalID: approvalID, Err: err}
		}
		// How the call ended, never what the tool returned: the output
		// belongs to the agent and to token holders (GET /v1/calls/{id}),
		// and the approver whose vote completed the quorum is no more
		// entitled to it than any other approver.
		call := *out
		call.Output = nil
		res.Outcome, res.ResolvedAt, res.ReceiptID, res.Call = approval.StatusApproved, now.Unix(), out.ReceiptID, &call
	default:
		// Progress (quorum not yet met) updates live views only: channels
		// were told about the request once and are not re-notified.
		snap := *final
		k.events.publish(Event{Type: EventApprovalRequested, Approval: &snap})
	}
	return res, nil
}
