package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// Channel names used in receipts' `channel` metadata.
const (
	ChannelAPI     = "api"
	ChannelTimeout = "timeout"
	ChannelBatch   = "batch"
)

// RespondResult is POST /approvals/{id}/respond's answer.
type RespondResult struct {
	ApprovalID string `json:"approval_id"`
	Outcome    string `json:"outcome"`               // approved | denied | pending (quorum not yet met)
	ResolvedAt int64  `json:"resolved_at,omitempty"` // unix seconds
	ReceiptID  string `json:"receipt_id,omitempty"`
	Approvals  int    `json:"approvals"`
	Quorum     int    `json:"quorum"`
	// Call is what became of the parked call once the request resolved:
	// an approval does not mean the call ran (the capability may have been
	// revoked during the wait, or the tool may have failed). It never
	// carries the tool's output, which is the agent's (votes.go).
	Call *Outcome `json:"call,omitempty"`
}

// suspend parks a call that needs a human. A matching standing (batch)
// approval is consulted first; otherwise the ApprovalRequest, the
// incomplete receipt and the call record are one durable commit, then the
// timer is armed, then channels are notified, then the caller answers 202.
// A reload since p was read parks nothing: errPolicyReloaded.
func (k *Kernel) suspend(ctx context.Context, rec *CallRecord, p *policy.Policy, g *policy.Grant, intent *GovernedIntent, d Decision, now time.Time) (*Outcome, error) {
	tool, _ := p.Tool(rec.Server, rec.Tool)
	// A standing approval cannot answer a question, nor a guard's deny that
	// the grant routes to a human (on_trigger): a batch pre-approves a class
	// of calls, while a routed deny asks about this one call (a write under
	// /etc/**, a call over the rate limit).
	if !tool.IsHITL() && !routedDeny(g, d.TriggeredBy) {
		if out, ok, err := k.tryBatch(ctx, rec, p, g, now); ok || err != nil {
			return out, err
		}
	}
	req := k.newApprovalRequest(rec, p, g, intent, d, now)
	// A request whose approvers are all the calling agent or the grant's
	// requesters (the kernel counts none of their votes, for or against),
	// at every tier it could escalate to, is one nobody may decide: denied
	// now, as any reload or restart would end it (reconcile, guard
	// approval-policy), not parked to time out (at auto_approve_advisory,
	// to run with nobody able to say no). A first tier of only such keys
	// is passed over to the next tier with someone (skip_tiers.go).
	if req = passOverSelfOnlyTiers(p, req, now); req == nil {
		return k.deny(ctx, rec, p, GuardApprovalPolicy, fmt.Sprintf("no approver of grant %s may decide this call under the policy in force: "+
			"the kernel never counts the calling agent's vote on its own call, nor a requester's", g.ID), now)
	}
	// Likewise a request that can only end denied: fewer approvers may
	// decide it, in every tier it could escalate to, than its quorum, and
	// no deadline runs it (a tool call under auto_approve_advisory, where a
	// human may still say no, parks; a confirm or ask never runs at its
	// deadline). Parked, it told an approver "the call runs once N
	// have approved", a promise nobody could keep.
	if quorumOutOfReach(p, req) {
		return k.deny(ctx, rec, p, GuardApprovalPolicy, quorumUnreachable(p, req), now)
	}
	rec.Status, rec.ApprovalID, rec.Reason = StatusPendingApproval, req.ApprovalID, d.Reason
	meta := map[string]any{"approval_request_id": req.ApprovalID, "summary": req.Summary, "deadline": req.ExpiresAt}
	if len(req.SkippedTiers) > 0 {
		meta["skipped_tiers"] = req.SkippedTiers // the audit trail says which tiers were passed over
	}
	r := k.newReceipt(rec, p, receipt.Decision{Verdict: receipt.Incomplete, Reason: "awaiting human approval"}, meta, now)
	req.ReceiptID = r.ID
	rec.ReceiptID = r.ID
	timeout, deadline := req.ExpiresAt-req.CreatedAt, req.ExpiresAt
	park := func(tx Tx) error {
		switch _, err := tx.Call(rec.RequestID); {
		case err == nil:
			return ErrRequestUsed
		case !errors.Is(err, ErrNotFound):
			return err
		}
		if err := checkPendingCap(tx, rec.Subject, p.Kernel.PendingApprovalCap()); err != nil {
			return err
		}
		// As an allow's commit does: a revocation (or the expiry) that
		// landed after the call's checks stops it here, before any
		// approver is asked about it.
		if err := k.capabilityLiveIn(tx, rec); err != nil {
			return err
		}
		// The approvers' time counts from the park's commit, the clock read
		// inside it: a commit delayed past the deadline the call's arrival
		// set (a loaded store, a lock wait) must not leave them a deadline
		// already due, acted on as they are first told.
		req.ExpiresAt = max(deadline, k.clock.Now().Unix()+timeout)
		r.Metadata["deadline"] = req.ExpiresAt
		if err := tx.PutApproval(req); err != nil {
			return err
		}
		tx.AppendReceipt(r)
		return tx.PutCall(rec)
	}
	// The request carries p's approvers, quorums, tiers and timeout: it is
	// parked, armed and told only while p is in force (commitWhileInForce),
	// so a reload lands before it (and the call is judged again by the
	// policy that reload put in force: errPolicyReloaded) or after it has
	// been told (and that reload's reconcile finds it). Parked under p
	// after that reconcile, it would keep approvers the reload removed (a
	// compromised key), and tell them of the call, until the next reload.
	// Notify and Relay never block. The tier is marked told later, once
	// the channels finish (tell): a reload landing before that which adds
	// approvers has them told then (markTold finds the announcement stale).
	inForce, err := k.commitWhileInForce(p, func() error {
		if err := k.update(ctx, park); err != nil {
			return err
		}
		k.armTimer(req.ApprovalID, req.ExpiresAt)
		event := EventApprovalRequested
		if req.Tier > 0 {
			event = EventApprovalEscalated // its first tiers were passed over
		}
		k.announceDurably(ctx, event, req)
		return nil
	})
	if !inForce {
		return nil, errPolicyReloaded
	}
	if _, gone := capabilityGoneAtDecision(err); gone {
		// Nothing was parked: the call is denied.
		reason := ErrCapabilityRevoked.Error()
		if errors.Is(err, errExpiredAtDecision) {
			reason = "capability expired before the call was parked"
		}
		rec.ApprovalID, rec.ReceiptID = "", ""
		return k.deny(ctx, rec, p, GuardCapability, reason, now)
	}
	if capErr := (*pendingCapError)(nil); errors.As(err, &capErr) {
		// Nothing was parked: the call is denied.
		rec.ApprovalID, rec.ReceiptID = "", ""
		return k.deny(ctx, rec, p, GuardPendingCap, capErr.Error(), now)
	}
	if mayHaveCommitted(err) {
		// A park reported failed may be durable: it is then announced after
		// the heal and may be approved and run. Never "nothing happened".
		return nil, fmt.Errorf("%w: the park's commit failed and may be durable: %w", ErrOutcomeUnknown, err)
	}
	if err != nil {
		return nil, err
	}
	out := OutcomeOf(rec)
	out.Deadline, out.Summary = req.ExpiresAt, req.Summary
	return out, nil
}

func (k *Kernel) newApprovalRequest(rec *CallRecord, p *policy.Policy, g *policy.Grant, intent *GovernedIntent, d Decision, now time.Time) *approval.Request {
	a := g.Approval
	if a == nil {
		a = &policy.Approval{} // validation forbids this; an empty set fails closed
	}
	approvers, channels, timeout := tierView(a, 0)
	tool, _ := p.Tool(rec.Server, rec.Tool)
	req := &approval.Request{
		ApprovalID: approval.NewRequestID(), Kind: approval.KindToolCall, PolicyID: g.ID,
		SubjectID: rec.Subject, SubjectPublicKey: rec.Subject, SubjectLabel: rec.SubjectLabel, CapabilityID: rec.CapabilityID,
		ToolServer: rec.Server, ToolName: rec.Tool, Action: rec.Action, ParameterHash: rec.ParameterHash,
		CreatedAt: now.Unix(), ExpiresAt: now.Add(timeout).Unix(), Summary: Summarize(rec, tool, intent),
		GovernedIntent: rec.Intent, TrustedApprovers: approvers, TriggeredBy: d.TriggeredBy,
		Quorum: max(a.Quorum, 1), DenyQuorum: max(a.DenyQuorum, 1), Status: approval.StatusPending,
		Channels: channels, RequestID: rec.RequestID, Requesters: a.Requesters, Votes: []approval.Vote{},
	}
	if len(req.GovernedIntent) == 0 {
		req.GovernedIntent = json.RawMessage("null")
	}
	if a, err := DeriveAmount(tool, rec.Arguments); err == nil && a != nil {
		req.Amount = &approval.Amount{Units: a.Units, Currency: a.Currency}
	}
	if p.Kernel.PublicURL != "" {
		req.CallbackHint = p.Kernel.PublicURL + "/approvals/" + req.ApprovalID + "/respond"
	}
	if a.ExposeArguments {
		req.Arguments = rec.Arguments
	}
	if tool.IsHITL() {
		applyHITL(req, rec)
	}
	return req
}

// tierView returns the trusted approvers, channels and timeout of escalation
// tier i (with timeout_action = "escalate"). Approvers accumulate: a first-tier approver may still decide after
// escalation. Without tiers every grant approver is trusted.
func tierView(a *policy.Approval, tier int) (approvers, channels []string, timeout time.Duration) {
	timeout = time.Duration(max(a.TimeoutSeconds, 1)) * time.Second
	channels = a.Channels
	// Tiers only shape the request when the policy escalates; with deny or
	// auto_approve_advisory every grant approver decides within timeout.
	if a.TimeoutAction != "escalate" || a.Escalation == nil || len(a.Escalation.Tiers) == 0 {
		for _, ap := range a.Approvers {
			approvers = append(approvers, ap.PublicKey.String())
		}
		return approvers, channels, timeout
	}
	for i := 0; i <= tier && i < len(a.Escalation.Tiers); i++ {
		for _, name := range a.Escalation.Tiers[i].Approvers {
			if ap, ok := a.ApproverByName(name); ok && !slices.Contains(approvers, ap.PublicKey.String()) {
				approvers = append(approvers, ap.PublicKey.String())
			}
		}
	}
	t := a.Escalation.Tiers[min(tier, len(a.Escalation.Tiers)-1)]
	if len(t.Channels) > 0 {
		channels = t.Channels
	}
	if t.TimeoutSeconds > 0 {
		timeout = time.Duration(t.TimeoutSeconds) * time.Second
	}
	return approvers, channels, timeout
}

// Approval returns a request by id.
func (k *Kernel) Approval(id string) (*approval.Request, error) {
	var req *approval.Request
	err := k.store.View(func(tx ReadTx) error {
		var err error
		req, err = tx.Approval(id)
		return err
	})
	return req, err
}

// PendingFilter narrows ListPending. Approver keeps the requests that
// key may decide (approval.Request.MayDecide): not the calling agent's
// own call, nor one of a grant that lists the key as a requester, whose
// votes the kernel never counts.
type PendingFilter struct {
	SubjectID, ToolServer, ToolName, Approver string
	Limit                                     int
}

// ListPending returns pending requests oldest first.
func (k *Kernel) ListPending(f PendingFilter) ([]*approval.Request, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	var out []*approval.Request
	err := k.store.View(func(tx ReadTx) error {
		return tx.PendingApprovals(func(r *approval.Request) bool {
			if (f.SubjectID == "" || r.SubjectID == f.SubjectID) && (f.ToolServer == "" || r.ToolServer == f.ToolServer) &&
				(f.ToolName == "" || r.ToolName == f.ToolName) && (f.Approver == "" || r.MayDecide(f.Approver)) {
				out = append(out, r)
			}
			return len(out) < f.Limit
		})
	})
	return out, err
}

// routedDeny reports whether any of the triggers is a guard's deny that
// grant g routes to a human (on_trigger = "require_approval").
func routedDeny(g *policy.Grant, triggers []string) bool {
	for _, t := range triggers {
		if g != nil && g.Constraints.OnTrigger[t] == "require_approval" {
			return true
		}
	}
	return false
}

func nameOr(name, key string) string {
	if name != "" {
		return name
	}
	return key
}

// chainReceipt builds the second receipt of an approval chain, linked to
// the incomplete one by previous_receipt_id.
func (k *Kernel) chainReceipt(rec *CallRecord, p *policy.Policy, req *approval.Request, d receipt.Decision, vote *approval.Vote, now time.Time) *receipt.Receipt {
	meta := map[string]any{
		"approval_request_id": req.ApprovalID,
		"previous_receipt_id": req.ReceiptID,
		"approval_latency_ms": max(now.UnixMilli()-req.CreatedAt*1000, 0),
	}
	if vote != nil {
		meta["approver"] = vote.Approver
		meta["approver_display_name"] = vote.DisplayName
		meta["approval_token_id"] = vote.TokenID
		meta["channel"] = vote.Channel
		if vote.Note != "" {
			meta["note"] = vote.Note
		}
		if vote.Custodial {
			meta["custodial"] = true
		}
		if advisory(vote, k.pub.String()) {
			// Every final receipt the kernel's own advisory vote decides says
			// so (also a deny on resume), as the allow path always did.
			meta["auto_approved"] = true
			meta["review_required"] = true
		}
	}
	if vote != nil && len(req.Votes) > 1 {
		// Every vote is signed into the receipt: "approvers" voted as the
		// deciding vote did, "dissenters" the other way (possibly none). An
		// auditor requires a token in the export for each key named here,
		// and refuses any other (receipt/verify_votes.go), so no vote can be
		// dropped from or added to the evidence unnoticed. A single vote
		// needs no list: it is the deciding token (approval_token_id).
		approvers, dissenters := []string{}, []string{}
		for _, v := range req.Votes {
			if v.Decision == vote.Decision {
				approvers = append(approvers, v.Approver)
			} else {
				dissenters = append(dissenters, v.Approver)
			}
		}
		meta["approvers"] = approvers
		meta["dissenters"] = dissenters
		// Those lists name every recorded vote, counted or not: a vote
		// whose key the policy p (the one deciding) no longer trusts at
		// req's tier, recorded before a reload removed it, is listed but
		// did not count. "uncounted" names those keys, so the receipt says
		// who decided: approvers and dissenters less the uncounted.
		// So does an approval of a question that gave other answers than
		// the deciding vote: it did not count toward these (uncounted.go;
		// the request's resolution names the same keys).
		if uncounted := k.uncountedVoters(p, req, vote); len(uncounted) > 0 {
			meta["uncounted"] = uncounted
		}
	}
	return k.newReceipt(rec, p, d, meta, now)
}

// Summarize is the one-line description approvers see instead of raw
// arguments (they see arguments only with expose_arguments). The money
// comes from the arguments when the tool declares where it lives (never
// only from the agent's word), and leads, so a clipped summary keeps it.
func Summarize(rec *CallRecord, tool *policy.Tool, intent *GovernedIntent) string {
	s := fmt.Sprintf("Agent wants to %s %s on %s", rec.Action, rec.Tool, rec.Server)
	if a, err := DeriveAmount(tool, rec.Arguments); err == nil && a != nil {
		s += fmt.Sprintf(" for %d %s", a.Units, a.Currency)
	} else if intent != nil && intent.MaxAmount != nil {
		s += fmt.Sprintf(" for up to %d %s (declared by the agent)", intent.MaxAmount.Units, intent.MaxAmount.Currency)
	}
	if intent != nil && intent.Purpose != "" {
		s += ": " + intent.Purpose
	}
	return clip(s, MaxSummaryLen)
}
