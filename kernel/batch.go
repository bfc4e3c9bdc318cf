package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// isPolicyApprover reports whether key approves under any grant.
func isPolicyApprover(p *policy.Policy, key string) bool {
	for i := range p.Grants {
		if a := p.Grants[i].Approval; a != nil {
			for _, ap := range a.Approvers {
				if ap.PublicKey.String() == key {
					return true
				}
			}
		}
	}
	return false
}

// CreateBatch stores a standing approval after verifying it.
func (k *Kernel) CreateBatch(ctx context.Context, raw []byte) (*approval.Batch, error) {
	now := k.clock.Now()
	p := k.Policy()
	tok, err := approval.VerifyBatch(raw, func(a string) bool { return isPolicyApprover(p, a) }, now)
	if err != nil {
		return nil, err
	}
	b := &approval.Batch{Token: tok, Raw: raw, CreatedAt: now.UnixMilli()}
	err = k.store.Update(ctx, func(tx Tx) error {
		if _, err := tx.Batch(tok.ID); err == nil {
			return fmt.Errorf("%w: batch %s exists", ErrConflict, tok.ID)
		}
		return tx.PutBatch(b)
	})
	return b, err
}

// ListBatches returns every stored standing approval.
func (k *Kernel) ListBatches() ([]*approval.Batch, error) {
	out := []*approval.Batch{}
	err := k.store.View(func(tx ReadTx) error {
		return tx.Batches(func(b *approval.Batch) bool { out = append(out, b); return true })
	})
	return out, err
}

// RevokeBatch durably revokes a standing approval.
func (k *Kernel) RevokeBatch(ctx context.Context, id string) error {
	now := k.clock.Now()
	return k.store.Update(ctx, func(tx Tx) error {
		b, err := tx.Batch(id)
		if err != nil {
			return err
		}
		if !b.Revoked {
			b.Revoked, b.RevokedAt = true, now.UnixMilli()
		}
		return tx.PutBatch(b)
	})
}

// errNoBatch aborts a batch claim's transaction when no standing approval
// covers the call (the call is parked for a human instead).
var errNoBatch = errors.New("no standing approval covers the call")

// tryBatch allows a pending call under a standing approval. Finding the
// covering batch, counting this call against it, and the allow decision
// are ONE durable commit made before dispatch: two concurrent calls cannot
// both use the last slot, and a slot is never spent without a decision.
// Quorum > 1 grants never use batches.
func (k *Kernel) tryBatch(ctx context.Context, rec *CallRecord, p *policy.Policy, g *policy.Grant, now time.Time) (*Outcome, bool, error) {
	if g.Approval == nil || g.Approval.Quorum > 1 {
		return nil, false, nil
	}
	trusted := map[string]bool{}
	for _, ap := range g.Approval.Approvers {
		trusted[ap.PublicKey.String()] = true
	}
	for _, r := range g.Approval.Requesters { // separation of duties holds for standing approvals too
		delete(trusted, r)
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
		var used *approval.Batch
		err := tx.Batches(func(b *approval.Batch) bool {
			if trusted[b.Token.Approver] && b.Token.Approver != rec.Subject && b.Covers(rec.Subject, rec.Server, rec.Tool, amount, now.Unix()) {
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
	switch err := k.commitAllow(ctx, p, rec, r, true, claim); {
	case errors.Is(err, errNoBatch):
		return nil, false, nil
	case errors.Is(err, errRevokedAtDecision):
		out, err := k.deny(ctx, rec, p, GuardCapability, ErrCapabilityRevoked.Error(), now)
		return out, true, err
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
