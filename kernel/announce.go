package kernel

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/chiokernel/chio/approval"
)

// Announcing a request to its approvers, and recording that they were
// told (approval.Request.Notified): only once the channels have finished
// with the announcement, so that one cut off (a crash, a shutdown) is made
// again by the next start, never lost.

// Notifier tells humans about approval requests. It is called after the
// request is durable, must not block, and can never approve anything: a
// channel's only way back is a signed token through Respond.
type Notifier interface {
	Notify(event string, req *approval.Request)
}

// TellingNotifier is a Notifier that delivers after Notify returns (the
// channel hub, whose queue lives in memory). NotifyThen calls done once
// every channel has finished with the notification: done(true) when each
// delivered it or gave up on it after trying (which is recorded on the
// request), done(false) when one refused it outright (its queue full: an
// agent flooding its own parked calls must not have one counted as told).
// It never calls done for a notification cut off before that (the
// notifier closed, or the process died with it queued). The kernel marks
// a request's tier told only on done(true), so a request refused or cut
// off is announced again at its deadline or the next start
// (announceIfUntold). done commits to the store; it runs on the
// notifier's goroutine, or on NotifyThen's caller when nothing was
// queued, and must be called at most once.
type TellingNotifier interface {
	Notifier
	NotifyThen(event string, req *approval.Request, done func(told bool))
}

// announce publishes to subscribers and notifies channels (after commit).
func (k *Kernel) announce(event string, req *approval.Request) {
	k.announceThen(event, req, nil)
}

// announceThen is announce that calls done (when not nil) once the
// channels have finished with the announcement (see TellingNotifier):
// done(true) at once when no channel was to be told, never when it was
// cut off.
func (k *Kernel) announceThen(event string, req *approval.Request, done func(told bool)) {
	snap := *req
	k.events.publish(Event{Type: event, Approval: &snap})
	if k.notifier == nil || (event != EventApprovalRequested && event != EventApprovalEscalated && event != EventApprovalResolved) {
		if done != nil {
			done(true)
		}
		return
	}
	out := snap // snap is the subscribers' now
	if event == EventApprovalResolved {
		out.Channels = k.endChannels(&out)
	}
	if tn, ok := k.notifier.(TellingNotifier); ok && done != nil {
		tn.NotifyThen(event, &out, done)
		return
	}
	k.notifier.Notify(event, &out)
	if done != nil {
		done(true) // a Notifier that returns has told
	}
}

// announceDurably announces a request parked or escalated (event) and,
// once its channels have finished with the announcement, records that its
// current tier was told (Notified). A run that dies before that point, or
// a shutdown that cuts the announcement off, leaves the tier untold for
// the next start (or heal, or another replica's sweep) to announce. A
// failed record costs at most one more announcement.
func (k *Kernel) announceDurably(ctx context.Context, event string, req *approval.Request) {
	k.tell(ctx, event, req)
}

// tell announces req (event) and marks its tier told once the channels
// have finished with it. Until then the request is being told: a deadline
// firing meanwhile acts on it as on any told request (announceIfUntold
// leaves it alone), as its announcement is on its way. One a channel's
// queue refused outright (done(false)) is not told: the tier stays untold,
// and its deadline announces it again before any deadline action.
func (k *Kernel) tell(ctx context.Context, event string, req *approval.Request) {
	id, tier := req.ApprovalID, req.Tier
	r := *req
	k.announcing.Store(id, tier)
	k.announceThen(event, &r, func(told bool) {
		if !told {
			k.announcing.CompareAndDelete(id, tier)
			return
		}
		_, stale := k.markTold(ctx, &r, r.ExpiresAt)
		k.announcing.CompareAndDelete(id, tier)
		if stale {
			// A reload added approvers while this was on its way (its
			// reconcile left the telling to this one): told now.
			if cur, err := k.Approval(id); err == nil {
				k.announceIfUntold(ctx, cur)
			}
		}
	})
}

// announceIfUntold announces pending req if its current tier's approvers
// were never told (see approval.Request.Notified), and gives them the
// tier's full time from now: a deadline that passed, or is about to, while
// nobody knew of the request would otherwise deny, escalate or (with
// auto_approve_advisory) run the call with no human asked. It reports
// whether it announced.
//
// The new deadline commits before the announcement goes out, so an
// approver answering it (through a channel that delivered while another
// still retries) answers a request whose deadline is the one they were
// shown, and other replicas' sweeps do not find it due; the tier is marked
// told once the channels have finished (tell).
func (k *Kernel) announceIfUntold(ctx context.Context, req *approval.Request) bool {
	if req.Status != approval.StatusPending || req.Notified > req.Tier {
		return false
	}
	if tier, busy := k.announcing.Load(req.ApprovalID); busy && tier == req.Tier {
		return false // this kernel is telling this tier right now (tell)
	}
	var timeout time.Duration
	if g, ok := k.Policy().Grant(req.PolicyID); ok && g.Approval != nil {
		_, _, timeout = tierView(g.Approval, req.Tier)
	}
	late := *req
	late.ExpiresAt = max(req.ExpiresAt, k.clock.Now().Add(timeout).Unix())
	switch cur, err := k.extendUntold(ctx, req, late.ExpiresAt); {
	case errors.Is(err, ErrNotFound):
		return false
	case err != nil:
		// Announced anyway, with its deadline in memory: a missed
		// announcement is worse than one whose record failed.
		slog.Warn("could not record a request's new deadline before announcing it", "approval_id", req.ApprovalID, "err", err)
	case cur == nil:
		return false // it moved on (decided, escalated) or was told meanwhile
	default:
		late = *cur
	}
	event := EventApprovalRequested
	if req.Tier > 0 {
		event = EventApprovalEscalated
	}
	k.armTimer(req.ApprovalID, late.ExpiresAt)
	k.tell(ctx, event, &late)
	return true
}

// extendUntold moves pending, untold req's deadline to at least expiresAt,
// in one commit, and returns the request as stored then; nil (and no
// error) when the request moved on or its tier was told meanwhile.
func (k *Kernel) extendUntold(ctx context.Context, req *approval.Request, expiresAt int64) (*approval.Request, error) {
	var stored *approval.Request
	err := k.update(context.WithoutCancel(ctx), func(tx Tx) error {
		stored = nil
		cur, err := tx.Approval(req.ApprovalID)
		if err != nil || cur.Status != approval.StatusPending || cur.Tier != req.Tier || cur.Notified > req.Tier {
			return err
		}
		if cur.ExpiresAt >= expiresAt {
			stored = cur
			return nil
		}
		cur.ExpiresAt = expiresAt
		stored = cur
		return tx.PutApproval(cur)
	})
	return stored, err
}

// markTold records that req (as announced) told its tier (Notified =
// Tier+1), moving its deadline to at least expiresAt, in one commit; it
// returns the request as stored then, or nil when it wrote nothing: the
// request moved on, was already marked, or the commit failed (logged; it
// is announced again later). It writes nothing either, and reports stale,
// when the request now trusts an approver the announcement did not name:
// a reload added them while it was on its way.
func (k *Kernel) markTold(ctx context.Context, req *approval.Request, expiresAt int64) (stored *approval.Request, stale bool) {
	err := k.update(context.WithoutCancel(ctx), func(tx Tx) error {
		stored, stale = nil, false
		cur, err := tx.Approval(req.ApprovalID)
		if err != nil || cur.Status != approval.StatusPending || cur.Tier != req.Tier || cur.Notified > req.Tier {
			return err
		}
		if slices.ContainsFunc(cur.TrustedApprovers, func(key string) bool { return !slices.Contains(req.TrustedApprovers, key) }) {
			stale = true
			return nil
		}
		cur.Notified, cur.ExpiresAt = req.Tier+1, max(cur.ExpiresAt, expiresAt)
		stored = cur
		return tx.PutApproval(cur)
	})
	if err != nil {
		slog.Warn("could not record that a request's approvers were told; it is announced again later",
			"approval_id", req.ApprovalID, "err", err)
		return nil, false
	}
	return stored, stale
}
