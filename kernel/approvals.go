package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
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

// Respond presents a signed token (the only way a human decision enters
// the kernel). outcome, if non-empty, must equal the signed decision.
func (k *Kernel) Respond(ctx context.Context, approvalID string, tokenRaw []byte, outcome, channel string) (*RespondResult, error) {
	return k.RespondWith(ctx, approvalID, tokenRaw, RespondOptions{Outcome: outcome, Channel: channel})
}

// RespondOptions qualify a presented token.
type RespondOptions struct {
	Outcome string // must equal the signed decision when set
	Channel string // lands in the receipt's `channel` metadata
	// Custodial marks a token chiod signed for the approver with a key it
	// holds (Slack's slack_custodial); the receipt says `custodial: true`.
	// The token is verified exactly like any other.
	Custodial bool
}

// tokenID reads a checked token's "id" as its verifier will (canon's
// exact member names): encoding/json would also take "ID" or "Id", and a
// token the verifier refuses as malformed would be answered as a replay of
// whichever spent token's id it carried.
func tokenID(tokenRaw []byte) (string, error) {
	var members map[string]json.RawMessage // map keys match exactly
	var id string
	if json.Unmarshal(tokenRaw, &members) != nil || json.Unmarshal(members["id"], &id) != nil || id == "" {
		return "", fmt.Errorf("%w: not a token object with an \"id\"", approval.ErrMalformedToken)
	}
	return id, nil
}

// RespondWith is Respond with options.
func (k *Kernel) RespondWith(ctx context.Context, approvalID string, tokenRaw []byte, o RespondOptions) (*RespondResult, error) {
	outcome, channel := o.Outcome, o.Channel
	// A vote leads to a commit and maybe a dispatch; neither may be cut off
	// by the presenter going away.
	ctx = context.WithoutCancel(ctx)
	if channel == "" {
		channel = ChannelAPI
	}
	// Untrusted input meets its size limit before anything parses it.
	if len(tokenRaw) > approval.MaxTokenBytes {
		return nil, fmt.Errorf("%w: token larger than %d bytes", approval.ErrMalformedToken, approval.MaxTokenBytes)
	}
	if err := canon.Check(tokenRaw); err != nil {
		return nil, fmt.Errorf("%w: %v", approval.ErrMalformedToken, err)
	}
	presentedID, err := tokenID(tokenRaw)
	if err != nil {
		return nil, err
	}
	if _, seen := k.consumed.Get(presentedID); seen {
		return nil, approval.ErrReplay
	}
	var req *approval.Request
	var used bool
	err = k.store.View(func(tx ReadTx) error {
		var err error
		if req, err = tx.Approval(approvalID); err != nil {
			return err
		}
		used, err = tx.Consumed(presentedID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if used || req.Status != approval.StatusPending {
		// The token spent or the request decided: if by a vote whose
		// answer was lost, it is told now (lost_votes.go), before the
		// presenter hears that it was.
		k.tellLostVotesOn(approvalID)
	}
	if used {
		k.consumed.Add(presentedID, struct{}{})
		return nil, approval.ErrReplay
	}
	// Nor a token none of the request's approvers signed: the route needs
	// no other credential, so that is anyone's, and it is refused below
	// whatever happens. Refused here, with the answer it would get there
	// (at the clock now), it costs no arrival (a shared store's writes)
	// and takes no longer on a real request than on a missing one.
	if current, _ := withApproversNow(k.Policy(), req); !approval.SignedByTrusted(tokenRaw, current) {
		return nil, refuseStranger(tokenRaw, current, k.clock.Now(), outcome)
	}
	// The vote is judged at now, its arrival: a deadline firing before it
	// is recorded or refused waits for it (arrivals.go). Registered only
	// here, after the checks that need no clock (size, form, a request
	// that exists, a token not spent, signed by one of its approvers): on
	// a shared store an arrival is written to the database, and junk must
	// not cost writes. A request decided meanwhile is caught by the vote's
	// commit, as a late vote.
	now, arrived, err := k.arrive(ctx, approvalID)
	if err != nil {
		return nil, err
	}
	defer arrived()
	p := k.Policy()
	// The approvers are the policy's now, not those copied at parking time.
	req, _ = withApproversNow(p, req)
	if req.Status != approval.StatusPending {
		return nil, notPending(tokenRaw, req, now, outcome)
	}
	tok, err := approval.Verify(tokenRaw, req, now, outcome)
	if errors.Is(err, approval.ErrDuplicateVote) {
		k.tellLostVotesOn(approvalID) // this approver's vote is recorded: maybe a lost one
	}
	if err != nil {
		return nil, err
	}
	if req.Kind == approval.KindQuestion && tok.Decision == approval.DecisionApproved {
		var q []approval.Question
		if err := json.Unmarshal(req.Questions, &q); err != nil {
			return nil, fmt.Errorf("%w: stored questions unreadable", ErrConflict)
		}
		if err := approval.ValidateAnswers(q, tok.Answers); err != nil {
			return nil, err
		}
	} else if len(tok.Answers) > 0 {
		// Nothing asked this approver for answers (a question's Decline
		// asks for none): stored with the vote, they would say more than
		// the approver decided. Refused here, nothing is consumed.
		return nil, fmt.Errorf("%w: answers are only for approving a question request, and this token %s a %s request; sign it without them",
			approval.ErrMalformedToken, map[string]string{approval.DecisionApproved: "approves", approval.DecisionDenied: "denies"}[tok.Decision], req.Kind)
	}
	if len(tok.AmendedArguments) > 0 {
		if req.Kind != approval.KindToolCall || tok.Decision != approval.DecisionApproved || req.Quorum > 1 {
			return nil, fmt.Errorf("%w: amended_arguments need an approval on a quorum-1 tool call", approval.ErrAmendmentRefused)
		}
		// Refused here, the token is not consumed and nothing changes; the
		// same rules run again when the call resumes.
		rec, err := k.Call(req.RequestID)
		if err != nil {
			return nil, err
		}
		if _, err := k.checkAmendment(p, req, rec, tok.AmendedArguments); err != nil {
			return nil, err
		}
	}
	vote := approval.Vote{Approver: tok.Approver, DisplayName: k.displayName(req, tok.Approver), TokenID: tok.ID,
		Decision: tok.Decision, Note: tok.Note, Channel: channel, Custodial: o.Custodial, At: now.Unix(), Token: json.RawMessage(tokenRaw)}
	return k.recordVote(ctx, req.ApprovalID, vote, tok, now, nil)
}

// refuseStranger is the refusal of a token none of req's approvers
// signed, as RespondWith gives it after the vote's arrival: notPending's
// on a request already decided, Verify's on a pending one.
func refuseStranger(tokenRaw []byte, req *approval.Request, now time.Time, outcome string) error {
	if req.Status != approval.StatusPending {
		return notPending(tokenRaw, req, now, outcome)
	}
	if _, err := approval.Verify(tokenRaw, req, now, outcome); err != nil {
		return err
	}
	return approval.ErrUntrustedSigner // not reached: Verify checks the signer
}

// notPending refuses a vote on a request already decided. When the token's
// approver has a vote recorded on it, the refusal says so (409
// replay_detected, "already decided this request"): that approver is most
// likely voting again after "your vote may or may not be recorded" (a
// second click and `chio approval deny` sign a fresh token), and their
// vote may be the one that decided the request. "Request is denied" alone
// (409 conflict) means to them that their vote came too late and was not
// recorded. The token is judged as on a pending request (approval.Verify
// answers ErrDuplicateVote for a recorded approver there too).
//
// Only a token signed by one of the request's approvers learns its status
// (even if the token is stale: its signer may know). Any other (unsigned,
// badly signed, or signed by a key that may not decide the request) gets
// Verify's refusal, as on a pending request: the token is the route's
// only credential, and how a request ended is read with a reader token,
// an approver session or the agent's own proof (SPEC §6).
func notPending(tokenRaw []byte, req *approval.Request, now time.Time, outcome string) error {
	_, err := approval.Verify(tokenRaw, req, now, outcome)
	switch {
	case errors.Is(err, approval.ErrDuplicateVote):
		return fmt.Errorf("%w; the request is %s", err, req.Status)
	case err != nil && !approval.SignedByTrusted(tokenRaw, req):
		return err
	}
	return fmt.Errorf("%w: request is %s", ErrConflict, req.Status)
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
