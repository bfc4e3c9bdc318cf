package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// GuardApprovalPolicy ends a parked call whose grant no longer names any
// approver who may decide it (a policy reload removed them all).
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

// withApproversNow returns a copy of req whose trusted set and requesters
// are the policy's now (what Verify and the quorum count check against).
func withApproversNow(p *policy.Policy, req *approval.Request) (*approval.Request, bool) {
	trusted, requesters, ok := approversNow(p, req)
	cur := *req
	cur.TrustedApprovers, cur.Requesters = trusted, requesters
	return &cur, ok
}

// ApplyPolicy puts p in force and reconciles every pending request with
// it: their trusted approvers are updated, and a request left with no
// approver who may decide it ends with a deny receipt (guard
// approval-policy), so the agent is answered rather than left to time out.
func (k *Kernel) ApplyPolicy(ctx context.Context, p *policy.Policy) error {
	k.SetPolicy(p)
	var pending []*approval.Request
	if err := k.store.View(func(tx ReadTx) error {
		return tx.PendingApprovals(func(r *approval.Request) bool { pending = append(pending, r); return true })
	}); err != nil {
		return err
	}
	for _, req := range pending {
		if err := k.reconcile(ctx, p, req.ApprovalID); err != nil {
			slog.Error("reconciling a pending approval with the reloaded policy failed", "approval_id", req.ApprovalID, "err", err)
		}
	}
	return nil
}

// reconcile updates one pending request to the approvers of policy p. A
// request the policy leaves as it is costs a read, not a commit (start-up
// reconciles every pending request).
func (k *Kernel) reconcile(ctx context.Context, p *policy.Policy, id string) error {
	if cur, err := k.Approval(id); err == nil && cur.Status == approval.StatusPending {
		trusted, requesters, ok := approversNow(p, cur)
		if ok && slices.Equal(trusted, cur.TrustedApprovers) && slices.Equal(requesters, cur.Requesters) {
			return nil
		}
	}
	var updated *approval.Request
	var orphaned bool
	err := k.store.Update(ctx, func(tx Tx) error {
		updated, orphaned = nil, false
		req, err := tx.Approval(id)
		if err != nil || req.Status != approval.StatusPending {
			return err
		}
		trusted, requesters, ok := approversNow(p, req)
		if !ok {
			orphaned = true
			return nil
		}
		if slices.Equal(trusted, req.TrustedApprovers) && slices.Equal(requesters, req.Requesters) {
			return nil
		}
		req.TrustedApprovers, req.Requesters = trusted, requesters
		updated = req
		return tx.PutApproval(req)
	})
	switch {
	case err != nil:
		return err
	case orphaned:
		// Nobody may decide it any more: it ends with a deny receipt now.
		_, err := k.endPending(ctx, p, id, k.clock.Now(), ending{
			status: approval.StatusDenied, callStatus: StatusDenied, verdict: receipt.Deny, guard: GuardApprovalPolicy,
			reason: func(req *approval.Request) string {
				return fmt.Sprintf("no approver of grant %s may decide this call under the policy in force", req.PolicyID)
			},
		})
		if errors.Is(err, approval.ErrNotPending) {
			return nil // decided meanwhile
		}
		return err
	case updated != nil:
		snap := *updated
		k.events.publish(Event{Type: EventApprovalRequested, Approval: &snap})
	}
	return nil
}
