package kernel

// The per-agent cap on waiting approval requests
// ([kernel] max_pending_approvals_per_agent). Without it one agent could
// park thousands of calls and bury its approvers' Slack, inboxes and
// dashboard under requests, hiding the one that matters.
//
// The count is a durable counter per subject, kept in the same commit as
// every change to an approval request: every kernel write goes through
// k.update, whose transaction counts each PutApproval that moves a request
// into or out of "pending". So the count is exact on both stores (on
// PostgreSQL the counter's row is locked like every row a function reads)
// and survives restarts. suspend reads it in the park's own commit.

import (
	"context"
	"errors"
	"fmt"

	"github.com/chiokernel/chio/approval"
)

// pendingCapError: the agent already has as many waiting approval
// requests as the policy allows; suspend denies the call instead of
// parking it.
type pendingCapError struct{ waiting, limit uint64 }

func (e *pendingCapError) Error() string {
	return fmt.Sprintf("this agent already has %d approval requests waiting; max_pending_approvals_per_agent is %d: "+
		"the call is not parked (a new call may be once one of them is answered or expires)", e.waiting, e.limit)
}

// GuardPendingCap names the cap on deny receipts.
const GuardPendingCap = "max_pending_approvals_per_agent"

// pendingKey is the counter of subject's waiting approval requests.
func pendingKey(subject string) string { return "pending\x00" + subject }

// update is the kernel's only way to write to the store (pending_cap_test
// checks that nothing else calls k.store.Update): fn's PutApprovals keep
// the per-agent pending counts.
func (k *Kernel) update(ctx context.Context, fn func(Tx) error) error {
	return k.store.Update(ctx, func(tx Tx) error { return fn(pendingCountTx{tx}) })
}

// pendingCountTx counts, per subject, the approval requests it writes into
// and out of "pending".
type pendingCountTx struct{ Tx }

func (t pendingCountTx) PutApproval(req *approval.Request) error {
	was := false
	switch old, err := t.Tx.Approval(req.ApprovalID); {
	case err == nil:
		was = old.Status == approval.StatusPending
	case !errors.Is(err, ErrNotFound):
		return err
	}
	if is := req.Status == approval.StatusPending; is != was {
		key := pendingKey(req.SubjectID)
		n, err := t.Counter(key)
		if err != nil {
			return err
		}
		switch {
		case is:
			n++
		case n > 0:
			// Never below zero: requests left pending by a build without
			// the count are not in it, so their ends are not taken off.
			n--
		}
		if err := t.SetCounter(key, n); err != nil {
			return err
		}
	}
	return t.Tx.PutApproval(req)
}

// checkPendingCap refuses to park one more request for subject when it
// already has limit waiting. Call it inside the park's commit.
func checkPendingCap(tx Tx, subject string, limit int) error {
	n, err := tx.Counter(pendingKey(subject))
	if err != nil {
		return err
	}
	if n >= uint64(limit) {
		return &pendingCapError{waiting: n, limit: uint64(limit)}
	}
	return nil
}

// pendingCountedKey marks a store whose per-agent counts include every
// request that was waiting when this build first started on it.
const pendingCountedKey = "pending-counted\x00v1"

// countPendingOnce sets every agent's count from the requests waiting now,
// once per store (Recover calls it at start-up): requests parked by a build
// without the count would otherwise be missing from it for good.
func (k *Kernel) countPendingOnce(ctx context.Context) error {
	return k.update(ctx, func(tx Tx) error {
		done, err := tx.Counter(pendingCountedKey)
		if err != nil || done > 0 {
			return err
		}
		counts := map[string]uint64{}
		if err := tx.PendingApprovals(func(r *approval.Request) bool { counts[r.SubjectID]++; return true }); err != nil {
			return err
		}
		for subject, n := range counts {
			if err := tx.SetCounter(pendingKey(subject), n); err != nil {
				return err
			}
		}
		return tx.SetCounter(pendingCountedKey, 1)
	})
}
