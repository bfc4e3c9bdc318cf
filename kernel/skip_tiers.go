package kernel

import (
	"slices"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
)

// An escalation tier in which nobody but the calling agent (or a
// requester of the grant) may vote decides nothing: the kernel never
// counts their votes on the call. Waiting out its timeout would only
// delay the tier whose approvers may decide (a platform team's tiers
// [on-call, security] where the on-call key is also the agent's), so the
// request is passed over to that tier at once, as an escalation, and
// records the tiers it passed over (approval.Request.SkippedTiers). Only a
// request that no tier gives anyone else is denied (nobody may decide it).

// passOverSelfOnlyTiers returns req moved on, from its tier, to the first
// escalation tier of policy p whose approvers include someone other than
// the calling agent and the grant's requesters (approversNow): a copy at
// that tier, with its approvers and channels, its full timeout from at,
// and the tiers passed over added to SkippedTiers. It returns req itself
// when req's own tier has someone, and nil when no tier from req's has
// (or the grant is gone): nobody may decide req. It writes nothing.
func passOverSelfOnlyTiers(p *policy.Policy, req *approval.Request, at time.Time) *approval.Request {
	if _, _, ok := approversNow(p, req); ok {
		return req
	}
	g, found := p.Grant(req.PolicyID)
	if !found || g.Approval == nil {
		return nil
	}
	next := *req
	next.SkippedTiers = slices.Clone(req.SkippedTiers)
	for {
		if !escalatesFrom(g.Approval, next.Tier) {
			return nil
		}
		next.SkippedTiers = append(next.SkippedTiers, next.Tier)
		next.Tier++
		if _, _, ok := approversNow(p, &next); ok {
			break
		}
	}
	approvers, channels, timeout := tierView(g.Approval, next.Tier)
	next.TrustedApprovers, next.Channels = approvers, channels
	next.ExpiresAt = at.Unix() + int64(timeout/time.Second)
	return &next
}

// atDecidingTier is req at the tier it waits at under p: passed over
// (passOverSelfOnlyTiers) from a tier p leaves to nobody but the calling
// agent, or req itself. A reconcile counts the recorded votes among that
// tier's approvers: a denial by an approver of the tier it is passed over
// to ends it as it would there.
// Its deadline is req's: it is read for who may decide, never re-armed.
func atDecidingTier(p *policy.Policy, req *approval.Request) *approval.Request {
	next := passOverSelfOnlyTiers(p, req, time.Time{})
	if next == nil || next == req {
		return req
	}
	next.ExpiresAt = req.ExpiresAt
	return next
}
