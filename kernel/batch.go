package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// Who may sign a standing approval: a batch covers a call only if its
// signer could have approved that very call with a per-call token at the
// moment it would have been parked. A new request starts at escalation
// tier 0, so the signer must be trusted at tier 0 (tierView, the function
// that gives new requests and votes their trusted set, so the two rules
// cannot drift), must not be the agent making the call nor a requester of
// the grant (approval.Verify's self-approval rules), and the grant's
// quorum must be 1 (one signature never meets a quorum of two). A key on
// the grant that only a later tier names (a CFO behind a Finance Lead),
// or that no tier names, cannot approve every call in advance when it
// could approve none of them as they arrive. The rule is read from the
// policy in force: checked when the batch is created, and again for every
// call it would cover, since a reload may change tiers or remove the key.

// batchSigners returns the keys whose standing approval may cover a call
// by subject under approval a (empty for quorum > 1 grants and grants
// without approval). subject is "" when unknown (a batch for any agent).
func batchSigners(a *policy.Approval, subject string) map[string]bool {
	signers := map[string]bool{}
	if a == nil || a.Quorum > 1 {
		return signers
	}
	trusted, _, _ := tierView(a, 0)
	for _, key := range trusted {
		if key != subject && !slices.Contains(a.Requesters, key) {
			signers[key] = true
		}
	}
	return signers
}

// mayCoverGrant reports whether a batch's patterns could match a call
// under grant g. The grant names its server exactly; its tool may be a
// path.Match glob, and two patterns are taken to overlap (the check at
// each call, which matches a concrete tool, decides).
func mayCoverGrant(t *approval.BatchToken, g *policy.Grant) bool {
	if !approval.MatchPattern(t.ServerPattern, g.Server) {
		return false
	}
	if !strings.ContainsAny(g.Tool, `*?[\`) {
		return approval.MatchPattern(t.ToolPattern, g.Tool)
	}
	if !strings.HasSuffix(t.ToolPattern, "*") {
		ok, _ := path.Match(g.Tool, t.ToolPattern)
		return ok
	}
	return true
}

// mayCreateBatch reports whether key may sign batch t under policy p: for
// at least one grant the batch could cover, key is one of batchSigners.
// With t nil it asks whether key may sign some batch (any patterns, any
// subject). A batch no call could use is refused rather than stored as a
// trap that a later reload might spring.
func mayCreateBatch(p *policy.Policy, t *approval.BatchToken, key string) bool {
	for i := range p.Grants {
		g := &p.Grants[i]
		subject := ""
		if t != nil {
			if !mayCoverGrant(t, g) {
				continue
			}
			subject = t.Subject
		}
		if batchSigners(g.Approval, subject)[key] {
			return true
		}
	}
	return false
}

// ErrTooManyBatches: the approver already holds MaxLiveBatchesPerApprover
// live standing approvals; a new one is refused and nothing is stored.
var ErrTooManyBatches = errors.New("too many live standing approvals")

// CreateBatch stores a standing approval after verifying it. Its audience
// must be this kernel's key (approval.VerifyBatch): every replica of one
// PostgreSQL database holds the same kernel key (pgstore refuses another),
// so the key names one service, not one process. Its signer
// must be a key that could approve, singly and at tier 0, a call under
// some grant the batch's patterns reach (see batchSigners); otherwise
// ErrUntrustedSigner and nothing is stored. A signer already holding
// MaxLiveBatchesPerApprover live batches (unexpired, unrevoked, not used
// up: approval.Batch.Live) is refused with ErrTooManyBatches: batches are
// never deleted, but every allow reads the live ones, so their number is
// what must stay bounded. A commit that failed but may have reached the
// disk is ErrOutcomeUnknown: the batch may be stored and live.
func (k *Kernel) CreateBatch(ctx context.Context, raw []byte) (*approval.Batch, error) {
	now := k.clock.Now()
	p := k.Policy()
	// Before the signature: is the key a batch signer anywhere? After it
	// (the patterns and subject are then known and signed): for a grant
	// this batch reaches?
	tok, err := approval.VerifyBatch(raw, k.pubText, func(a string) bool { return mayCreateBatch(p, nil, a) }, now)
	if err != nil {
		return nil, err
	}
	if !mayCreateBatch(p, tok, tok.Approver) {
		return nil, fmt.Errorf("%w: %s could not approve on its own any call this batch reaches "+
			"(a batch signer must be a first-tier approver of a quorum-1 grant the batch's patterns match)",
			approval.ErrUntrustedSigner, tok.Approver)
	}
	b := &approval.Batch{Token: tok, Raw: raw, CreatedAt: now.UnixMilli()}
	err = k.update(ctx, func(tx Tx) error {
		switch _, err := tx.Batch(tok.ID); {
		case err == nil:
			return fmt.Errorf("%w: batch %s exists", ErrConflict, tok.ID)
		case !errors.Is(err, ErrNotFound):
			return err // never overwrite what could not be read
		}
		live := 0
		err := tx.LiveBatches(k.clock.Now().Unix(), func(o *approval.Batch) bool {
			if o.Token.Approver == tok.Approver {
				live++
			}
			return true
		})
		if err != nil {
			return err
		}
		if live >= MaxLiveBatchesPerApprover {
			return fmt.Errorf("%w: %s already holds %d live standing approvals, the most one approver may hold; "+
				"revoke one (chio approval batch revoke) or wait for one to end or be used up", ErrTooManyBatches, tok.Approver, live)
		}
		return tx.PutBatch(b)
	})
	if mayHaveCommitted(err) {
		// Never "nothing was written": an approver told so signs another
		// batch, and the agent then holds both.
		return nil, fmt.Errorf("%w: standing approval %s may or may not be stored: its commit failed and may have reached the disk "+
			"(list the batches to learn which; creating it again is refused as existing if it was): %w", ErrOutcomeUnknown, tok.ID, err)
	}
	return b, err
}

// ListBatches returns up to limit stored standing approvals whose ids sort
// after after ("" from the first), in id order, and whether more follow.
// Every batch ever created is kept, so a listing is read a page at a time.
func (k *Kernel) ListBatches(after string, limit int) ([]*approval.Batch, bool, error) {
	out := []*approval.Batch{}
	more := false
	err := k.store.View(func(tx ReadTx) error {
		return tx.Batches(after, func(b *approval.Batch) bool {
			if len(out) == limit {
				more = true
				return false
			}
			out = append(out, b)
			return true
		})
	})
	return out, more, err
}

// RevokeBatch durably revokes a standing approval. A commit that failed
// but may have reached the disk is ErrOutcomeUnknown (the batch may be
// revoked); revoking again is safe.
func (k *Kernel) RevokeBatch(ctx context.Context, id string) error {
	now := k.clock.Now()
	// Like a capability's revocation, it waits out a full commit queue.
	err := k.updateAfterVote(ctx, func(tx Tx) error {
		b, err := tx.Batch(id)
		if err != nil {
			return err
		}
		if !b.Revoked {
			b.Revoked, b.RevokedAt = true, now.UnixMilli()
		}
		return tx.PutBatch(b)
	})
	if mayHaveCommitted(err) {
		return fmt.Errorf("%w: standing approval %s may or may not be revoked: its commit failed and may have reached the disk "+
			"(revoke it again): %w", ErrOutcomeUnknown, id, err)
	}
	return err
}

// errNoBatch aborts a batch claim's transaction when no standing approval
// covers the call (the call is parked for a human instead).
var errNoBatch = errors.New("no standing approval covers the call")

// tryBatch allows a pending call under a standing approval. Finding the
// covering batch, counting this call against it, and the allow decision
// are ONE durable commit made before dispatch: two concurrent calls cannot
// both use the last slot, and a slot is never spent without a decision.
// Only batches signed by a key that could approve this call singly when it
// is parked count (batchSigners, from the policy in force): none do on a
// quorum > 1 grant.
func (k *Kernel) tryBatch(ctx context.Context, rec *CallRecord, p *policy.Policy, g *policy.Grant, now time.Time) (*Outcome, bool, error) {
	trusted := batchSigners(g.Approval, rec.Subject)
	if len(trusted) == 0 {
		return nil, false, nil
	}
	// A standing approval's money limits are checked against the amount
	// the ARGUMENTS carry (the tool's declared pointers), never the agent's
	// own intent: a batch "under $100" must not admit a $450,000 refund
	// declared as $1. A tool with no declared amount is not covered by a
	// batch with money limits (Covers: a missing amount is no free pass).
	var amount *approval.Amount
	tool, _ := p.Tool(rec.Server, rec.Tool)
	switch a, err := DeriveAmount(tool, rec.Arguments); {
	case err != nil:
		return nil, false, nil // the guards deny such calls; never cover them
	case a != nil:
		amount = &approval.Amount{Units: a.Units, Currency: a.Currency}
	}
	r := k.newReceipt(rec, p, receipt.Decision{Verdict: receipt.Allow}, map[string]any{"channel": ChannelBatch}, now)
	claim := func(tx Tx) error {
		// The batch's window is judged when the decision commits, as the
		// capability's expiry is (commitAllow): a commit delayed past the
		// batch's end must not run a call under it with no human asked.
		// The allow receipt is stamped at that same instant: a batch
		// created while the commit was delayed covers the decision, not
		// the call's arrival before its window (receipt verify checks the
		// receipt's time against it).
		clockNow := k.clock.Now()
		at := clockNow.Unix()
		r.Timestamp = clockNow.UnixMilli()
		var used *approval.Batch
		err := tx.LiveBatches(at, func(b *approval.Batch) bool {
			if trusted[b.Token.Approver] && b.Covers(rec.Subject, rec.Server, rec.Tool, amount, at) {
				used = b
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
		if used == nil {
			return errNoBatch
		}
		used.Use(amount)
		r.Metadata["batch_approval_id"] = used.Token.ID
		r.Metadata["approver"] = used.Token.Approver
		r.Metadata["approver_display_name"] = k.displayNameIn(g, used.Token.Approver)
		return tx.PutBatch(used)
	}
	// The signers above are those of p, the policy this call was judged
	// by: a batch allows the call only if p is in force when the claim
	// commits. After a reload since p was read nothing is written and the
	// call is judged again by the policy in force (errPolicyReloaded).
	inForce, err := k.commitWhileInForce(p, func() error { return k.commitAllow(ctx, p, rec, r, true, claim) })
	if !inForce {
		return nil, true, errPolicyReloaded
	}
	if reason, gone := capabilityGoneAtDecision(err); gone {
		out, err := k.deny(ctx, rec, p, GuardCapability, reason, now)
		return out, true, err
	}
	switch {
	case errors.Is(err, errNoBatch):
		return nil, false, nil
	case err != nil:
		return nil, true, err
	}
	out, err := k.deliverMarked(ctx, rec)
	return out, true, err
}

func (k *Kernel) displayNameIn(g *policy.Grant, key string) string {
	for _, ap := range g.Approval.Approvers {
		if ap.PublicKey.String() == key {
			return ap.DisplayName
		}
	}
	return ""
}

// BatchView is a batch as listed over HTTP.
type BatchView struct {
	Token   json.RawMessage     `json:"token"`
	Usage   approval.BatchUsage `json:"usage"`
	Revoked bool                `json:"revoked"`
}
