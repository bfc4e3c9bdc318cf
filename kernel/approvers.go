package kernel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// GuardApprovalPolicy ends a parked call whose grant no longer names any
// approver who may decide it (a policy reload removed them all), and an
// approved call whose recorded votes no longer approve it under the policy
// in force when it resumes (approved_now.go).
const GuardApprovalPolicy = "approval-policy"

// Who may decide a parked call is read from the policy in force at vote
// time, never from the copy stored when the call was parked: a key removed
// from the grant (and reloaded) stops counting at once, for requests
// parked before too.

// approversNow returns the approvers and requesters the policy in force
// gives req (its grant's view at req's escalation tier); ok is false when
// the grant is gone or no longer has approvers.
func approversNow(p *policy.Policy, req *approval.Request) (trusted, requesters []string, ok bool) {
	g, found := p.Grant(req.PolicyID)
	if !found || g.Approval == nil {
		return nil, nil, false
	}
	trusted, _, _ = tierView(g.Approval, req.Tier)
	requesters = g.Approval.Requesters
	// The agent can never approve its own call, and a requester never
	// approves under this grant: a set of only such keys decides nothing.
	for _, key := range trusted {
		if key != req.SubjectID && !slices.Contains(requesters, key) {
			return trusted, requesters, true
		}
	}
	return trusted, requesters, false
}

// MayDecideAtMost counts the approvers of a, in every tier a call could
// escalate to (tierView of the last is them all), whose votes count on a
// call by subject: neither subject (the calling agent) nor a requester.
func MayDecideAtMost(a *policy.Approval, subject string) int {
	last := 0
	if a.Escalation != nil {
		last = max(len(a.Escalation.Tiers)-1, 0)
	}
	all, _, _ := tierView(a, last)
	n := 0
	for _, key := range all {
		if key != subject && !slices.Contains(a.Requesters, key) {
			n++
		}
	}
	return n
}

// MayRunAtDeadline says whether a's deadline can run a call nobody
// approved (auto_approve_advisory, at once or after the last tier). Never
// a confirm or ask (hitl): the deadline declines those whatever a says
// (timers.go, expire), since they exist to hear a person.
func MayRunAtDeadline(a *policy.Approval, hitl bool) bool {
	if hitl {
		return false
	}
	switch a.TimeoutAction {
	case policy.TimeoutAutoApproveAdvisory:
		return true
	case policy.TimeoutEscalate:
		return a.Escalation != nil && a.Escalation.TerminalAction == policy.TimeoutAutoApproveAdvisory
	}
	return false
}

// quorumOutOfReach says whether, under p, fewer approvers may decide
// req (now: req with p's approvers and quorums) than its quorum, in every
// tier it could escalate to, and p's deadline cannot run it: it could
// only end denied.
func quorumOutOfReach(p *policy.Policy, now *approval.Request) bool {
	g, ok := p.Grant(now.PolicyID)
	return ok && g.Approval != nil && MayDecideAtMost(g.Approval, now.SubjectID) < now.Quorum &&
		!MayRunAtDeadline(g.Approval, now.Kind != approval.KindToolCall)
}

// quorumUnreachable is the reason a request whose quorum is out of reach
// (quorumOutOfReach) is denied; req's quorum is p's (withApproversNow).
func quorumUnreachable(p *policy.Policy, req *approval.Request) string {
	g, _ := p.Grant(req.PolicyID)
	return QuorumUnreachable(req.PolicyID, req.Quorum, MayDecideAtMost(g.Approval, req.SubjectID))
}

// QuorumUnreachable is the reason a call is denied when only n of grant's
// approvers may decide it, fewer than its quorum (suspend and reconcile;
// what `chio policy explain` predicts).
func QuorumUnreachable(grant string, quorum, n int) string {
	return fmt.Sprintf("grant %s's quorum of %d approvals cannot be met: only %d of its approvers may decide this call: "+
		"the kernel never counts the calling agent's vote on its own call, nor a requester's", grant, quorum, n)
}

// quorumsNow returns how many approvals resolve req and how many denials
// end it under policy p, never easier than what req holds (the values it
// was parked with, or raised to by an earlier reload): a reload that
// raises quorum or lowers deny_quorum applies to calls already parked; one
// that loosens either applies only to calls parked after it. A parked call
// never becomes easier to approve or harder to deny.
func quorumsNow(p *policy.Policy, req *approval.Request) (quorum, denyQuorum int) {
	quorum, denyQuorum = max(req.Quorum, 1), max(req.DenyQuorum, 1)
	if g, ok := p.Grant(req.PolicyID); ok && g.Approval != nil {
		quorum = max(quorum, g.Approval.Quorum)
		denyQuorum = min(denyQuorum, max(g.Approval.DenyQuorum, 1))
	}
	return quorum, denyQuorum
}

// withApproversNow returns a copy of req whose trusted set, requesters and
// quorums are the policy's now (what Verify, the amendment rule and the
// quorum count check against).
func withApproversNow(p *policy.Policy, req *approval.Request) (*approval.Request, bool) {
	trusted, requesters, ok := approversNow(p, req)
	cur := *req
	cur.TrustedApprovers, cur.Requesters = trusted, requesters
	cur.Quorum, cur.DenyQuorum = quorumsNow(p, req)
	return &cur, ok
}

// ApplyPolicy puts p in force and reconciles every pending request with
// it: their trusted approvers are updated (a request whose tier is left to
// nobody but the calling agent is passed over to the next tier with
// someone: skip_tiers.go), and a request left with no approver who may
// decide it at any tier, or with fewer than its quorum in every tier
// and a deadline that denies (quorumOutOfReach), ends with a deny receipt
// (guard approval-policy), so the agent is answered rather than left to
// time out;
// one whose recorded denials meet deny_quorum ends denied, and one whose
// recorded approvals meet the quorum is approved (reload_resolve.go). Each
// reconcile commits only while p is in force.
//
// A call the reload approves is resumed (checked again, sent, settled) by
// recovery's workers in the background, never inside the reconcile loop:
// a slow or hanging tool must hold neither the reload nor the reconcile of
// the requests after it. Its approval and its move to dispatching are
// durable before ApplyPolicy goes on, so a run that stops before the
// resume finishes it at the next start. WaitRecovery waits for them.
//
// p is in force whatever ApplyPolicy returns. An error says which pending
// requests are not reconciled with it yet (the store failed: all of them
// when it could not list them); they are reconciled again once the store
// answers, by the replica sweep (reconcileAgain) or the heal
// (RecoverAfterHeal).
func (k *Kernel) ApplyPolicy(ctx context.Context, p *policy.Policy) error {
	k.SetPolicy(p)
	pending, err := k.pendingRequests()
	if err != nil {
		k.unreconciled.Store(true)
		return fmt.Errorf("listing the pending approval requests to reconcile with the reloaded policy failed; they are reconciled once the store answers: %w", err)
	}
	approved := 0
	var failed []string
	var first error
	for _, req := range pending {
		resumed, err := k.reconcile(ctx, p, req.ApprovalID)
		if err != nil {
			k.unreconciled.Store(true)
			failed, first = append(failed, req.ApprovalID), cmp.Or(first, err)
			slog.Error("reconciling a pending approval with the reloaded policy failed; it is retried", "approval_id", req.ApprovalID, "err", err)
		}
		if resumed {
			approved++
		}
	}
	if approved > 0 {
		slog.Info("the reloaded policy approved pending calls; they are being checked and delivered in the background",
			"approved_calls", approved)
	}
	if len(failed) > 0 {
		named := strings.Join(failed[:min(len(failed), maxNamedUnreconciled)], ", ")
		if len(failed) > maxNamedUnreconciled {
			named += ", …"
		}
		return fmt.Errorf("%d of %d pending approval requests are not reconciled with the reloaded policy yet (they are retried): %s: %w",
			len(failed), len(pending), named, first)
	}
	return nil
}

// maxNamedUnreconciled bounds the request ids ApplyPolicy's error names
// (each failure is logged with its id as well).
const maxNamedUnreconciled = 20

// reconcileAgain, on each replica sweep, reconciles every pending request
// with the policy in force when a reload's reconcile failed with the
// store. Nothing else would until a restart (Recover): a shared store has
// no heal hook, and left as it was the request kept approvers the reload
// removed, the ones it added were never told, and its deadline ended it
// as unanswered.
func (k *Kernel) reconcileAgain(ctx context.Context) {
	if !k.unreconciled.Swap(false) {
		return
	}
	pending, err := k.pendingRequests()
	if err != nil {
		k.unreconciled.Store(true)
		return
	}
	p := k.Policy()
	for _, req := range pending {
		if _, err := k.reconcile(ctx, p, req.ApprovalID); err != nil {
			k.unreconciled.Store(true)
			slog.Warn("replica sweep: reconciling a pending approval with the policy in force failed; retrying next sweep",
				"approval_id", req.ApprovalID, "err", err)
		}
	}
}

// reconcile updates one pending request to the approvers of policy p. A
// request the policy leaves as it is costs a read, not a commit (start-up
// reconciles every pending request). A request p approves is handed to
// recovery's workers, which resume it in the background (resumed is then
// true): at a reload and at start-up (Recover) alike, a tool that hangs
// holds neither.
func (k *Kernel) reconcile(ctx context.Context, p *policy.Policy, id string) (resumed bool, err error) {
	if cur, err := k.Approval(id); err == nil && cur.Status == approval.StatusPending {
		now, ok := withApproversNow(p, cur)
		if vote, _ := approvingVoteNow(p, cur); ok && unchanged(now, cur) && vote == nil && !quorumOutOfReach(p, now) {
			return false, nil
		}
	}
	if hook := k.beforeReconcileCommit.Swap(nil); hook != nil {
		(*hook)()
	}
	var updated *approval.Request
	var orphaned, unreachable, denied bool
	// A request the reload approves (reload_resolve.go): its call, left
	// dispatching with no decision for recovery's workers to resume.
	var approved *approval.Request
	var rec *CallRecord
	// Registered as a vote is (live_votes.go) until the call this
	// reconcile approves is handed to recovery's workers, whose queue then
	// holds it: it is that resume's to decide, never ownStranded's.
	k.voting.enter(id)
	defer k.voting.leave(id)
	// Committed only while p is in force (commitWhileInForce): a reload
	// that replaced p since this reconcile began reconciles every pending
	// request with its own policy (ApplyPolicy), and a reconcile by a policy
	// no longer in force must not land after that one: it would end a call
	// the policy in force keeps, or store approvers it removed.
	inForce, err := k.commitWhileInForce(p, func() error {
		return k.update(ctx, func(tx Tx) error {
			updated, orphaned, unreachable, denied, approved = nil, false, false, false, nil
			stored, err := tx.Approval(id)
			if err != nil || stored.Status != approval.StatusPending {
				return err
			}
			// A tier p leaves to nobody but the calling agent (or a
			// requester) is passed over to the next tier with someone, with
			// that tier's full time (skip_tiers.go); with none, it ends.
			req := passOverSelfOnlyTiers(p, stored, k.clock.Now())
			if req == nil {
				orphaned = true
				return nil
			}
			passedOver := req != stored
			now, ok := withApproversNow(p, req)
			if !ok {
				orphaned = true
				return nil
			}
			if quorumOutOfReach(p, now) {
				// Nor may it ever be approved (suspend denies such a call).
				unreachable = true
				return nil
			}
			if deniedNow(p, req) {
				// A lowered deny_quorum that the denials already recorded meet
				// ends the call now, as the last of them would have.
				denied = true
				return nil
			}
			if vote, _ := approvingVoteNow(p, req); vote != nil {
				// The votes recorded meet the quorum in force: approved now,
				// in the one transition a vote takes (recordVote).
				at := k.clock.Now()
				c, err := tx.Call(req.RequestID)
				if err != nil {
					return err
				}
				now.Status = approval.StatusApproved
				now.Resolution = &approval.Resolution{Outcome: approval.StatusApproved, At: at.Unix(), TokenID: vote.TokenID,
					DecidedBy: decidedBy(vote), Reason: fmt.Sprintf("approved at a policy reload: the approvals recorded meet quorum %d of the policy in force", now.Quorum),
					Uncounted: k.uncountedVoters(p, now, vote)}
				c.Status, c.UpdatedAt = StatusDispatching, at.UnixMilli()
				if err := tx.PutCall(c); err != nil {
					return err
				}
				approved, rec = now, c
				return tx.PutApproval(now)
			}
			if !passedOver && unchanged(now, stored) {
				return nil
			}
			if passedOver || slices.ContainsFunc(now.TrustedApprovers, func(key string) bool { return !slices.Contains(stored.TrustedApprovers, key) }) {
				// Approvers the reload added, or a tier the request was passed
				// over to, were never told of this request: the tier counts as
				// untold until they are (announceIfUntold, after this commit, or
				// the next start if this run dies: as an escalation), so no
				// deadline action applies before they have had its time.
				now.Notified = min(now.Notified, now.Tier)
			}
			updated = now
			return tx.PutApproval(now)
		})
	})
	switch {
	case !inForce:
		return false, nil // superseded: the newer reload reconciles this request
	case err != nil:
		return false, err
	case denied:
		// Ended in its own commit; check re-reads the request there, so
		// a vote that resolved it meanwhile wins.
		_, err := k.endPendingWhileInForce(ctx, p, id, ending{
			status: approval.StatusDenied, callStatus: StatusDenied, verdict: receipt.Deny, guard: GuardHumanApproval,
			check: func(req *approval.Request) error {
				if req.Status != approval.StatusPending {
					return approval.ErrNotPending
				}
				if !deniedNow(p, req) {
					return errNotDeniedNow
				}
				return nil
			},
			reason: func(req *approval.Request) string {
				_, dq := quorumsNow(p, req)
				return fmt.Sprintf("denied: the policy in force ends grant %s's calls at %d denial(s), and they are recorded", req.PolicyID, dq)
			},
			// People denied it: the receipt names the latest counted
			// denial, as recordVote's deny does (deniedNow found one).
			decider: func(req *approval.Request) *approval.Vote {
				trusted, _, _ := approversNow(p, atDecidingTier(p, req))
				return lastDenial(req.Votes, trusted)
			},
			// Denied at the tier p passes it over to: the request says so
			// (its deadline is kept: it ends now).
			at: func(req *approval.Request) *approval.Request { return atDecidingTier(p, req) },
		})
		if errors.Is(err, approval.ErrNotPending) || errors.Is(err, errNotDeniedNow) {
			return false, nil // decided meanwhile
		}
		return false, err
	case orphaned, unreachable:
		// Nobody may decide it any more, or never enough to approve it: it
		// ends with a deny receipt now.
		_, err := k.endPendingWhileInForce(ctx, p, id, ending{
			status: approval.StatusDenied, callStatus: StatusDenied, verdict: receipt.Deny, guard: GuardApprovalPolicy,
			reason: func(req *approval.Request) string {
				if unreachable {
					now, _ := withApproversNow(p, req)
					return quorumUnreachable(p, now)
				}
				return fmt.Sprintf("no approver of grant %s may decide this call under the policy in force", req.PolicyID)
			},
		})
		if errors.Is(err, approval.ErrNotPending) {
			return false, nil // decided meanwhile
		}
		return false, err
	case approved != nil:
		k.resumeInBackground(ctx, approved, rec)
		return true, nil
	case updated != nil && updated.Notified <= updated.Tier:
		k.announceIfUntold(ctx, updated) // through the channels, with the tier's full time
	case updated != nil:
		snap := *updated
		k.events.publish(Event{Type: EventApprovalRequested, Approval: &snap})
	}
	return false, nil
}

// endPendingWhileInForce is endPending for a reconcile's ending: it
// commits only while p, the policy that judged it, is in force. A reload
// since then leaves the request to its own reconcile (nil, nil).
func (k *Kernel) endPendingWhileInForce(ctx context.Context, p *policy.Policy, id string, e ending) (*CallRecord, error) {
	var rec *CallRecord
	_, err := k.commitWhileInForce(p, func() error {
		var err error
		rec, err = k.endPending(ctx, p, id, k.clock.Now(), e)
		return err
	})
	return rec, err
}

// unchanged reports whether reconciling left a request's approvers,
// requesters and quorums as stored.
func unchanged(now, stored *approval.Request) bool {
	return slices.Equal(now.TrustedApprovers, stored.TrustedApprovers) && slices.Equal(now.Requesters, stored.Requesters) &&
		now.Quorum == stored.Quorum && now.DenyQuorum == stored.DenyQuorum
}

var errNotDeniedNow = errors.New("the recorded denials no longer meet deny_quorum")

// deniedNow reports whether the denials recorded on req, counted among the
// approvers policy p trusts (at the tier req waits at under p:
// atDecidingTier), meet the deny_quorum in force.
func deniedNow(p *policy.Policy, req *approval.Request) bool {
	now, _ := withApproversNow(p, atDecidingTier(p, req))
	_, denied := now.CountsAmong(now.TrustedApprovers)
	return denied >= now.DenyQuorum
}
