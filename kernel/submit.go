package kernel

// Submit: a call from authentication to its decision (allow, deny or
// park), and the first Submit of a request id that later ones wait for.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// firstSubmit is the first Submit of a request id while it runs: done
// closes when it returns, decided when its allow decision is durable.
type firstSubmit struct {
	done, decided chan struct{}
	once          sync.Once
	// subject and paramHash are whose call it is and what it asks: a
	// duplicate of another call does not wait for it (sameCallInFlight).
	subject   keys.PublicKey
	paramHash string
	// err is how the first Submit ended, set before done closes (read only
	// after it has): a duplicate that finds no record gives the same answer.
	err error
}

// sameCall reports whether dup, a Submit of the same request id, is a
// retry of f's call: the same agent asking the same (sameCall, which
// answers from the record, applies the same rule). Any other call under
// the id is refused at once (ErrRequestUsed), as it would be once f's call
// is recorded. It must not wait for f: the request id may be another
// agent's, who is owed no hint of it — not how long its call takes to be
// decided, nor how it ended (endedWith, which only a retry may get).
func (f *firstSubmit) sameCall(dup *firstSubmit) bool {
	return f.subject == dup.subject && f.paramHash == dup.paramHash
}

// endedWith is the first Submit's error once it has returned (nil while it
// runs, or when it succeeded).
func (f *firstSubmit) endedWith() error {
	select {
	case <-f.done:
		return f.err
	default:
		return nil
	}
}

// allowed reports whether f's allow decision is durable (allowDurable).
func (f *firstSubmit) allowed() bool {
	select {
	case <-f.decided:
		return true
	default:
		return false
	}
}

// allowDurable lets duplicates of request id stop waiting for its first
// Submit: its allow decision is durable, and its record answers them.
func (k *Kernel) allowDurable(id string) {
	if v, ok := k.inflight.Load(id); ok {
		f := v.(*firstSubmit)
		f.once.Do(func() { close(f.decided) })
	}
}

// Submit decides one call. Input problems (malformed call, untrusted
// capability, bad or stale proof) are errors without a receipt, since the
// caller is not authenticated; every authenticated call gets a receipt.
func (k *Kernel) Submit(ctx context.Context, call *ToolCall) (*Outcome, error) {
	start := time.Now()
	now := k.clock.Now() // the one reference time for this decision
	vc, paramHash, err := k.authenticate(call, now)
	if err != nil {
		return nil, err
	}
	// The agent's share of the calls chiod runs at once, counted from
	// here until this Submit returns (calls_inflight.go).
	if err := k.calls.acquire(vc.subject, k.maxCalls); err != nil {
		return nil, err
	}
	defer k.calls.release(vc.subject)
	// One decision per request_id: concurrent duplicates wait for the
	// first — until it ends, or its allow decision is durable: a tool that
	// runs for minutes must not hold a retry (whose client may give up and
	// call the outcome unknown) — the retry is answered "dispatching", and
	// its client awaits the call.
	first := &firstSubmit{done: make(chan struct{}), decided: make(chan struct{}), subject: vc.subject, paramHash: paramHash}
	if prev, loaded := k.inflight.LoadOrStore(call.RequestID, first); loaded {
		p := prev.(*firstSubmit)
		if !p.sameCall(first) {
			return nil, ErrRequestUsed
		}
		select {
		case <-p.done:
		case <-p.decided:
		case <-ctx.Done():
			// The first attempt may still run the call: never "nothing
			// happened" (the context's error stays matchable).
			return nil, fmt.Errorf("%w: stopped waiting for the first attempt of request %s: %w", ErrOutcomeUnknown, call.RequestID, ctx.Err())
		}
		return k.replay(call, vc, paramHash, p.endedWith())
	}
	defer func() { k.inflight.Delete(call.RequestID); close(first.done) }()

	var revoked bool
	var existing *CallRecord
	ans := k.answered(call.RequestID) // before the store read (settling.go)
	err = k.store.View(func(tx ReadTx) error {
		c, err := tx.Call(call.RequestID)
		if err == nil {
			existing = c
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		revoked, err = tx.Revoked(vc.cap.ID)
		return err
	})
	if err != nil {
		// This may be the retry of a call whose decision is durable although
		// its commit was reported failed: without the record, chio cannot
		// tell, so the answer is never "nothing was allowed".
		return nil, fmt.Errorf("%w: cannot read whether request %s was decided: %w", ErrOutcomeUnknown, call.RequestID, fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
	if existing != nil {
		return k.sameCall(settledView(existing, ans), vc, paramHash)
	}
	// From here on the call has effects (a dispatch, a durable receipt): a
	// client that disconnects must not cancel them half way.
	out, err := k.decide(context.WithoutCancel(ctx), call, vc, paramHash, revoked, now)
	decidedHere := true
	if errors.Is(err, ErrRequestUsed) {
		// Another kernel sharing the store decided this request id between
		// our read and our commit: answer like a local duplicate would,
		// and count no decision (that kernel counted it).
		out, err = k.replay(call, vc, paramHash, nil)
		decidedHere = false
	}
	first.err = err // before done closes (deferred): duplicates read it then
	if decidedHere && k.observer != nil {
		switch {
		case err == nil:
			k.observer.Decision(out.Status, time.Since(start))
		case first.allowed():
			// The allow is durable (its receipt stored, the call sent or
			// recovery's to finish) though its outcome is not recorded
			// (ErrOutcomeUnknown): this kernel decided it all the same,
			// and recovery decides nothing.
			k.observer.Decision(StatusAllowed, time.Since(start))
		}
	}
	return out, err
}

// decide judges a new call by the policy in force and carries out the
// verdict. An allow, a park or a deny judged by a policy a reload
// replaced before its commit wrote nothing (errPolicyReloaded): the call
// is judged again, from the start, by the policy now in force. It is
// still one call: its hit on max_calls_per_minute is counted once
// (decisionRate).
func (k *Kernel) decide(ctx context.Context, call *ToolCall, vc verifiedCap, paramHash string, revoked bool, now time.Time) (*Outcome, error) {
	var rate decisionRate
	for {
		out, err := k.decideOnce(ctx, call, vc, paramHash, revoked, now, &rate)
		if !errors.Is(err, errPolicyReloaded) {
			return out, err
		}
	}
}

func (k *Kernel) decideOnce(ctx context.Context, call *ToolCall, vc verifiedCap, paramHash string, revoked bool, now time.Time, rate *decisionRate) (*Outcome, error) {
	p := k.Policy()
	rec := &CallRecord{
		RequestID: call.RequestID, Subject: vc.subjectText, CapabilityID: vc.cap.ID,
		CapabilityExpiresAt: vc.cap.ExpiresAt, SubjectLabel: vc.cap.Label, Server: call.Server, Tool: call.Tool, Operation: call.Operation, Action: call.Operation,
		ParameterHash: paramHash, Arguments: call.Arguments, Intent: call.GovernedIntent,
		CreatedAt: now.UnixMilli(), UpdatedAt: now.UnixMilli(),
	}
	if vc.cap.Issuer != k.pubText {
		rec.CapabilityIssuer = vc.cap.Issuer // re-checked on resume (trustsIssuer)
	}
	tool, _ := p.Tool(call.Server, call.Tool)
	if tool != nil && tool.Action != "" {
		rec.Action = tool.Action
	}
	// Capability validity is checked first: an expired or revoked capability
	// is a deny receipt attributed to the authenticated subject.
	if revoked {
		return k.deny(ctx, rec, p, GuardCapability, ErrCapabilityRevoked.Error(), now)
	}
	if err := vc.cap.CheckTime(now); err != nil {
		return k.deny(ctx, rec, p, GuardCapability, err.Error(), now)
	}
	intent, err := parseIntent(call.GovernedIntent)
	if err != nil {
		return nil, err
	}
	grant, _ := p.Match(vc.cap.Has, call.Server, call.Tool, call.Operation)
	req := &Request{Policy: p, Grant: grant, Tool: tool, Call: call, Operation: call.Operation,
		Subject: rec.Subject, Intent: intent, Now: now}
	if grant != nil {
		rec.GrantID = grant.ID
		if grant.Constraints.RequireApprovalFirstN > 0 {
			req.PriorCalls = k.firstNCount(firstNKey(grant.ID, rec.Subject))
		}
		if grant.Constraints.MaxCallsPerMinute > 0 {
			req.RecentCalls = rate.recentCalls(k, rateKey(grant.ID, rec.Subject), now, grant.Constraints.MaxCallsPerMinute)
		}
	}
	d := k.pipeline.Evaluate(req, true)
	if tool.IsHITL() {
		// confirm / ask always ask a human, once the other guards allow.
		if err := checkHITLArgs(call.Tool, call.Arguments); err != nil {
			return nil, err
		}
		if d.Verdict == Allow {
			d = Decision{Verdict: PendingApproval, TriggeredBy: []string{"hitl"}, Reason: "the agent asks a human"}
		}
	}
	switch d.Verdict {
	case Deny:
		return k.deny(ctx, rec, p, d.Guard, d.Reason, now)
	case PendingApproval:
		rec.CapabilityGrants = vc.cap.Grants // the resume re-matches with them
		return k.suspend(ctx, rec, p, grant, intent, d, now)
	}
	return k.execute(ctx, rec, p, now)
}

// errPolicyReloaded: a reload put another policy in force after the one a
// decision (allow, park or deny) was judged by was read; the decision was
// not committed.
var errPolicyReloaded = errors.New("the policy was reloaded while the call was decided")

// execute runs a call the pipeline allowed: the allow decision is made
// durable first (write-ahead), then the call is delivered and settled.
// The allow commits only while p, the policy it was judged by, is in force
// (commitWhileInForce); otherwise errPolicyReloaded and nothing is written.
func (k *Kernel) execute(ctx context.Context, rec *CallRecord, p *policy.Policy, now time.Time) (*Outcome, error) {
	r := k.newReceipt(rec, p, receipt.Decision{Verdict: receipt.Allow}, nil, now)
	inForce, err := k.commitWhileInForce(p, func() error { return k.commitAllow(ctx, p, rec, r, true, nil) })
	if !inForce {
		return nil, errPolicyReloaded
	}
	if reason, gone := capabilityGoneAtDecision(err); gone {
		return k.deny(ctx, rec, p, GuardCapability, reason, now)
	}
	if err != nil {
		return nil, err
	}
	return k.deliverMarked(ctx, rec)
}

// deny records a new call's deny decision by p. Like an allow, it commits
// only while p is in force (commitWhileInForce); otherwise nothing is
// written and errPolicyReloaded has decide judge the call again: a rule
// the reload dropped must not deny a call after the reload, under the
// replaced policy's hash.
func (k *Kernel) deny(ctx context.Context, rec *CallRecord, p *policy.Policy, guard, reason string, now time.Time) (*Outcome, error) {
	rec.Status, rec.Guard, rec.Reason = StatusDenied, guard, reason
	r := k.newReceipt(rec, p, receipt.Decision{Verdict: receipt.Deny, Guard: guard, Reason: reason}, nil, now)
	rec.ReceiptID, rec.UpdatedAt = r.ID, r.Timestamp
	inForce, err := k.commitWhileInForce(p, func() error {
		return k.update(ctx, func(tx Tx) error {
			switch _, err := tx.Call(rec.RequestID); {
			case err == nil:
				return ErrRequestUsed // a record appeared since we looked: never overwrite
			case !errors.Is(err, ErrNotFound):
				return err
			}
			tx.AppendReceipt(r)
			return tx.PutCall(rec)
		})
	})
	if !inForce {
		return nil, errPolicyReloaded
	}
	if err != nil {
		return nil, err
	}
	return OutcomeOf(rec), nil
}
