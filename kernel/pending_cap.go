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

// pendingPrefix starts every per-agent count's key.
const pendingPrefix = "pending\x00"

// pendingKey is the counter of subject's waiting approval requests.
func pendingKey(subject string) string { return pendingPrefix + subject }

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
		if _, err := t.Counter(pendingLockKey); err != nil { // see pendingLockKey
			return err
		}
		key := pendingKey(req.SubjectID)
		n, err := t.Counter(key)
		if err != nil {
			return err
		}
		switch {
		case is:
			n++
		case n > 0:
			// Never below zero: a request parked by a build that did not
			// count (until the next start's recount) is not in it.
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
	if _, err := tx.Counter(pendingLockKey); err != nil { // see pendingLockKey
		return err
	}
	n, err := tx.Counter(pendingKey(subject))
	if err != nil {
		return err
	}
	if n >= uint64(limit) {
		return &pendingCapError{waiting: n, limit: uint64(limit)}
	}
	return nil
}

// pendingLockKey is read first by every transaction that changes a count
// and by the recount, so that on a shared store (PostgreSQL locks the row a
// function reads) a recount never interleaves with a park or an ending.
const pendingLockKey = "pending-recount"

// recountPending sets every agent's count from the requests waiting now
// and zeroes every count that no waiting request backs. Recover runs it at
// each start: a count can drift only through writes this build did not
// make (an older build still serving during a rolling upgrade ends or
// parks requests without counting), and the next start of any replica
// heals it.
func (k *Kernel) recountPending(ctx context.Context) error {
	var counted []string // committed non-zero counts, listed before the transaction
	if cs, ok := k.store.(CounterScanner); ok {
		if err := cs.CountersWithPrefix(pendingPrefix, func(key string, v uint64) bool {
			if v > 0 {
				counted = append(counted, key)
			}
			return true
		}); err != nil {
			return err
		}
	}
	return k.update(ctx, func(tx Tx) error {
		if _, err := tx.Counter(pendingLockKey); err != nil {
			return err
		}
		waiting := map[string]uint64{}
		if err := tx.PendingApprovals(func(r *approval.Request) bool { waiting[pendingKey(r.SubjectID)]++; return true }); err != nil {
			return err
		}
		for _, key := range counted {
			if _, ok := waiting[key]; !ok {
				if err := tx.SetCounter(key, 0); err != nil {
					return err
				}
			}
		}
		for key, n := range waiting {
			if err := tx.SetCounter(key, n); err != nil {
				return err
			}
		}
		return tx.SetCounter(pendingLockKey, 1) // the lock's row exists from the first start on
	})
}
