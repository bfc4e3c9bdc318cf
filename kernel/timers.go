package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// armTimer schedules the deadline of a pending request on the kernel's
// clock. Timers are derived from durable state (each pending request's
// expires_at), so Recover re-arms them all after a restart.
func (k *Kernel) armTimer(id string, deadline int64) {
	k.timersMu.Lock()
	defer k.timersMu.Unlock()
	if k.stopping() {
		return // closed: the next start re-arms it
	}
	if old, ok := k.timers[id]; ok {
		old.Stop()
	}
	// At the deadline itself, not "deadline - now" read earlier: time that
	// passes before the timer is registered must not postpone it.
	k.timers[id] = k.clock.AfterFuncAt(time.Unix(deadline, 0), func() { k.onDeadline(id) })
}

// stopTimers disarms every deadline at Close: a closing kernel neither
// denies, escalates nor auto-approves (and dispatches) anything. A
// deadline that passes while chiod is down fires at the next start
// (Recover re-arms it, already due).
func (k *Kernel) stopTimers() {
	k.timersMu.Lock()
	defer k.timersMu.Unlock()
	for id, t := range k.timers {
		t.Stop()
		delete(k.timers, id)
	}
}

func (k *Kernel) stopTimer(id string) {
	k.timersMu.Lock()
	defer k.timersMu.Unlock()
	if t, ok := k.timers[id]; ok {
		t.Stop()
		delete(k.timers, id)
	}
}

// timerArmed reports whether a deadline is armed here for request id.
func (k *Kernel) timerArmed(id string) bool {
	k.timersMu.Lock()
	defer k.timersMu.Unlock()
	_, armed := k.timers[id]
	return armed
}

// ArmedTimers reports how many deadlines are armed (for tests and metrics).
func (k *Kernel) ArmedTimers() int {
	k.timersMu.Lock()
	defer k.timersMu.Unlock()
	return len(k.timers)
}

func (k *Kernel) onDeadline(id string) {
	k.timersMu.Lock()
	delete(k.timers, id)
	k.timersMu.Unlock()
	if k.stopping() {
		return // closed after this timer fired: the next start re-arms it
	}
	// With replicas, the deadline is fired by the kernel that claims it; one
	// this kernel cannot claim is another's, or no longer due, and the
	// sweep (replica.go) fires it if its claimant goes away.
	claimed, err := k.claimDeadline(id)
	if err == nil && !claimed {
		return
	}
	if err == nil {
		err = k.Expire(context.Background(), id)
	}
	if err != nil && !errors.Is(err, approval.ErrNotPending) && !errors.Is(err, ErrNotFound) {
		// The request stays pending and durable; retry rather than lose it.
		slog.Error("approval deadline handling failed; retrying", "approval_id", id, "err", err)
		k.fireAgainIn(id, time.Second)
	}
}

// fireAgainIn re-arms the deadline of id to fire after d (a retry, or a
// wait for votes on their way), replacing one armed; a closed kernel arms
// nothing (the next start re-arms it).
func (k *Kernel) fireAgainIn(id string, d time.Duration) {
	k.timersMu.Lock()
	defer k.timersMu.Unlock()
	if k.stopping() {
		return
	}
	if old, ok := k.timers[id]; ok {
		old.Stop()
	}
	k.timers[id] = k.clock.AfterFunc(d, func() { k.onDeadline(id) })
}

// Expire applies the timeout action of a pending request whose deadline has
// passed: deny (receipt guard approval-timeout), escalate to the next tier,
// or auto_approve_advisory (the kernel self-signs; the receipt says so).
func (k *Kernel) Expire(ctx context.Context, id string) error {
	ctx = context.WithoutCancel(ctx)
	now := k.clock.Now()
	req, err := k.Approval(id)
	if err != nil {
		return err
	}
	if req.Status != approval.StatusPending {
		k.tellLostEndingOn(id) // a deadline's denial whose answer was lost, say
		return approval.ErrNotPending
	}
	if now.Unix() < req.ExpiresAt {
		k.armTimer(id, req.ExpiresAt) // woke early (clock adjustment): sleep again
		// A retried escalation whose commit was reported failed may have
		// landed: its tier's approvers are told now.
		k.announceIfUntold(ctx, req)
		return nil
	}
	if k.announceIfUntold(ctx, req) {
		// Due, but its tier's approvers were never told (the run that
		// parked or escalated it died first): no deadline action applies
		// before they are, and have had the tier's time.
		return nil
	}
	if wait := k.arrivals.before(id, req.ExpiresAt); wait != nil {
		// Votes that arrived before the deadline are recorded (or
		// refused) first, as they came first (arrivals.go); the deadline
		// fires again once they are.
		go func() {
			wait()
			k.armTimer(id, req.ExpiresAt)
		}()
		return nil
	}
	// Asked after now was read: a vote another replica records later is
	// judged at a later reading, late (arrivals.go).
	arriving, err := k.votesArrivingElsewhere(ctx, id, req.ExpiresAt)
	if err != nil {
		return err // onDeadline retries: the deadline is never dropped
	}
	if arriving {
		// A vote that arrived in time on another replica is recorded (or
		// refused) first; the deadline fires again a second later.
		k.fireAgainIn(id, time.Second)
		return nil
	}
	err = k.expire(ctx, req, now)
	switch {
	case errors.Is(err, errNotDue):
		// Another kernel sharing the store moved the deadline (escalated)
		// since we read the request: wait for the new one.
		cur, err := k.Approval(id)
		if err != nil {
			return err // onDeadline retries: the deadline is never dropped
		}
		if cur.Status == approval.StatusPending {
			k.armTimer(id, cur.ExpiresAt)
		}
		return nil
	case err != nil && errors.Is(err, ErrConflict):
		// Resolved by another kernel between our read and our commit.
		if cur, rerr := k.Approval(id); rerr == nil && cur.Status != approval.StatusPending {
			return approval.ErrNotPending
		}
	}
	return err
}

// errNotDue: inside the transaction, the request's deadline is no longer
// the one that fired (another kernel escalated it meanwhile).
var errNotDue = errors.New("deadline moved")

// due re-checks, inside a transaction, that the deadline Expire acts on is
// still the request's: pending, at the tier it read, and past due.
func due(req *approval.Request, tier int, now time.Time) error {
	switch {
	case req.Status != approval.StatusPending:
		return approval.ErrNotPending
	case req.Tier != tier || now.Unix() < req.ExpiresAt:
		return errNotDue
	}
	return nil
}

func (k *Kernel) expire(ctx context.Context, req *approval.Request, now time.Time) error {
	id := req.ApprovalID
	action := "deny"
	p := k.Policy()
	g, ok := p.Grant(req.PolicyID)
	if ok && g.Approval != nil {
		action = g.Approval.TimeoutAction
	}
	if action == "escalate" {
		if escalatesFrom(g.Approval, req.Tier) {
			return k.escalate(ctx, id, req.Tier, now)
		}
		action = g.Approval.Escalation.TerminalAction
	}
	if action == "auto_approve_advisory" && req.Kind == approval.KindToolCall {
		err := k.autoApprove(ctx, req, now)
		if !errors.Is(err, errHumanDenied) {
			return err
		}
	}
	// A confirm or ask exists to hear a person: unanswered, it is declined,
	// never "confirmed" or answered by the kernel. And a call a human has
	// denied is not run for want of a second denial.
	return k.timeoutDeny(ctx, p, id, req.Tier, now)
}

// escalatesFrom reports whether approval a answers the deadline of tier
// with an escalation to a next tier. escalate checks it again inside its
// commit, against the policy in force there.
func escalatesFrom(a *policy.Approval, tier int) bool {
	return a.TimeoutAction == "escalate" && a.Escalation != nil && tier+1 < len(a.Escalation.Tiers)
}

// errHumanDenied: a human's denial is on record, so the advisory
// auto-approval does not apply (the deadline denies instead).
var errHumanDenied = errors.New("a human denied this request")

// advisoryInForce reports whether policy p, for req at its current tier,
// answers the deadline with auto_approve_advisory (directly, or as the
// terminal action of its last escalation tier). The advisory's two commits
// (advisoryMayDecide, then the vote) re-check it against the policy in force, so
// a reload between them that ends the advisory approval is honoured: the
// deadline fires again and applies the new action.
func advisoryInForce(p *policy.Policy, req *approval.Request) bool {
	g, ok := p.Grant(req.PolicyID)
	if !ok || g.Approval == nil || req.Kind != approval.KindToolCall {
		return false
	}
	action := g.Approval.TimeoutAction
	if action == "escalate" {
		if g.Approval.Escalation == nil || req.Tier+1 < len(g.Approval.Escalation.Tiers) {
			return false
		}
		action = g.Approval.Escalation.TerminalAction
	}
	return action == "auto_approve_advisory"
}

// escalate moves req to its next tier. It commits only while the policy it
// judged by is in force (commitWhileInForce): a reload's reconcile may have
// read the request before this commit, found it unchanged at its old tier
// and done nothing, so an escalation by a replaced policy would leave the
// next tier with that policy's approvers, channels and timeout, and an
// approver the reload added never told. A reload since then makes the
// deadline fire again under the policy now in force (errNotDue).
func (k *Kernel) escalate(ctx context.Context, id string, tier int, now time.Time) error {
	var next *approval.Request
	p := k.Policy()
	if hook := k.beforeEscalationCommit.Swap(nil); hook != nil {
		(*hook)()
	}
	// Escalated, armed and told only while p is in force, as a park is
	// (suspend): a reload lands before the escalation or after its tier
	// was marked told. Landing between the two, its reconcile found the
	// tier being told (announceDurably) and left the telling to it, which
	// then told the tier as p had it and marked it told: approvers the
	// reload added to the tier were never told.
	inForce, err := k.commitWhileInForce(p, func() error {
		err := k.update(ctx, func(tx Tx) error {
			return k.escalateIn(tx, p, id, tier, now, &next)
		})
		if err != nil {
			return err
		}
		k.armTimer(id, next.ExpiresAt)
		k.announceDurably(ctx, EventApprovalEscalated, next)
		return nil
	})
	if !inForce {
		return errNotDue
	}
	return err
}

// escalateIn is escalate's transaction, judged by policy p.
func (k *Kernel) escalateIn(tx Tx, p *policy.Policy, id string, tier int, now time.Time, next **approval.Request) error {
	req, err := tx.Approval(id)
	if err != nil {
		return err
	}
	if err := due(req, tier, now); err != nil {
		return err
	}
	g, ok := p.Grant(req.PolicyID)
	if !ok || g.Approval == nil {
		return fmt.Errorf("%w: grant %s gone", ErrConflict, req.PolicyID)
	}
	if !escalatesFrom(g.Approval, req.Tier) {
		// A reload since expire read the timeout action ended the
		// escalation (or this tier's successor): the deadline fires
		// again and applies the action now in force.
		return errNotDue
	}
	req.Tier++
	approvers, channels, timeout := tierView(g.Approval, req.Tier)
	// The new tier's time counts from this commit (the clock read inside
	// it), as a park's does: a delayed commit must not leave the tier a
	// deadline already due when its approvers are first told.
	at := max(now.Unix(), k.clock.Now().Unix())
	req.TrustedApprovers, req.Channels, req.ExpiresAt = approvers, channels, at+int64(timeout/time.Second)
	*next = req
	return tx.PutApproval(req)
}

// timeoutDeny ends req at the deadline of tier, the action policy p
// gives it. Like an escalation, it commits only while p is in force
// (commitWhileInForce): a reload since expire read p (one that now
// escalates, say) makes the deadline fire again under the policy now in
// force (errNotDue). It once denied anyway, under the hash of a policy
// whose timeout action was not deny.
func (k *Kernel) timeoutDeny(ctx context.Context, p *policy.Policy, id string, tier int, now time.Time) error {
	if hook := k.beforeTimeoutDenyCommit.Swap(nil); hook != nil {
		(*hook)()
	}
	inForce, err := k.commitWhileInForce(p, func() error {
		_, err := k.endPending(ctx, p, id, now, ending{
			status: approval.StatusExpired, callStatus: StatusDenied, verdict: receipt.Deny, guard: GuardApprovalTimeout,
			// Still pending, still at the tier whose deadline fired, and due: a
			// replica that lost a race (or a late timer) changes nothing.
			check: func(req *approval.Request) error { return due(req, tier, now) },
			reason: func(req *approval.Request) string {
				return fmt.Sprintf("no decision before the deadline (%s)", time.Unix(req.ExpiresAt, 0).UTC().Format(time.RFC3339))
			},
		})
		return err
	})
	if !inForce {
		return errNotDue
	}
	return err
}

// autoApprove is timeout_action = auto_approve_advisory: the kernel signs a
// token with its own key so the chain still holds a signed decision, and the
// allow receipt carries auto_approved and review_required.
func (k *Kernel) autoApprove(ctx context.Context, req *approval.Request, now time.Time) error {
	tok := approval.NewToken(req, k.pub, approval.DecisionApproved, now, time.Minute)
	tok.Note = "auto-approved at deadline (auto_approve_advisory): no human reviewed this call"
	raw, err := tok.Sign(k.key)
	if err != nil {
		return err
	}
	vote := approval.Vote{Approver: k.pub.String(), DisplayName: "chio kernel (auto_approve_advisory)", TokenID: tok.ID,
		Decision: approval.DecisionApproved, Note: tok.Note, Channel: ChannelTimeout, At: now.Unix(), Token: raw}
	// The kernel key is not in the trusted set; the vote is recorded
	// directly, and only from this timeout path.
	tier := req.Tier
	if err := k.advisoryMayDecide(ctx, req.ApprovalID, tier, now); err != nil {
		return err
	}
	// The vote's own commit checks it all again (a reload or another
	// replica may have changed the request in between).
	applies := func(p *policy.Policy, cur *approval.Request) error { return advisoryApplies(p, cur, tier, now) }
	_, err = k.recordVote(ctx, req.ApprovalID, vote, tok, now, applies)
	return err
}

// advisoryMayDecide checks, in a transaction before the kernel's vote,
// that the advisory auto-approval applies: the deadline that fired is
// still the request's, the policy in force still answers it with
// auto_approve_advisory, and no human has denied the call (errHumanDenied):
// the advisory approval is for calls nobody decided, never one a person
// refused. It writes nothing. It once stored quorum 1 on the request, and
// when a reload then ended the advisory (the vote refused, the request
// left pending) that 1 became the request's floor: quorumsNow never goes
// below the stored quorum, so a reload lowering quorum loosened a call
// parked under a higher one. The kernel's vote gets quorum 1 inside its
// own commit (recordVote), the only one that can resolve the call.
func (k *Kernel) advisoryMayDecide(ctx context.Context, id string, tier int, now time.Time) error {
	return k.update(ctx, func(tx Tx) error {
		req, err := tx.Approval(id)
		if err != nil {
			return err
		}
		return advisoryApplies(k.Policy(), req, tier, now)
	})
}

// advisoryApplies reports, inside a transaction, whether the advisory
// auto-approval may decide req under policy p, for the deadline of tier
// that fired at now; it runs in advisoryMayDecide and again in the
// kernel's vote commit. It applies only while:
//   - that deadline is still the request's and has passed (due): a
//     request whose deadline was moved later (its tier's approvers told
//     late) is not decided at the old one (errNotDue);
//   - the tier's approvers were told (Notified): a reload that adds an
//     approver marks the tier untold, and the new approver gets the tier's
//     time before any deadline action (errNotDue; announceIfUntold tells
//     them and moves the deadline);
//   - p answers the deadline with auto_approve_advisory (errNotDue: the
//     deadline fires again and applies the action now in force);
//   - no human has denied the call (errHumanDenied).
func advisoryApplies(p *policy.Policy, req *approval.Request, tier int, now time.Time) error {
	if err := due(req, tier, now); err != nil {
		return err
	}
	if req.Notified <= req.Tier || !advisoryInForce(p, req) {
		return errNotDue
	}
	if req.DeniedByAnyone() {
		return errHumanDenied
	}
	return nil
}
