package kernel

// The policy in force, and reloads ordered against the commits judged by
// it. A vote or an allow decision is judged by a policy read before its
// commit; policyMu keeps a reload (SetPolicy, write) from landing between
// that judgement and the commit (read), so what commits was judged by the
// policy in force when it committed. Per process: replicas sharing a store
// each reload on their own (docs/ARCHITECTURE.md).

import (
	"context"
	"errors"

	"github.com/chiokernel/chio/policy"
)

// Policy returns the policy in force.
func (k *Kernel) Policy() *policy.Policy { return k.policy.Load() }

// SetPolicy swaps the policy; later decisions (and resumed approvals) use
// it. It waits for the votes and allow decisions being committed under
// the policy it replaces: once it returns, every one that commits is
// judged by p.
func (k *Kernel) SetPolicy(p *policy.Policy) {
	k.policyMu.Lock()
	defer k.policyMu.Unlock()
	k.policy.Store(p)
}

// commitWhileInForce runs commit if p is the policy in force, holding off
// reloads until it returns; inForce is false, and nothing ran, when a
// reload has put another policy in force since p was read. commit must
// not call SetPolicy.
func (k *Kernel) commitWhileInForce(p *policy.Policy, commit func() error) (inForce bool, err error) {
	k.policyMu.RLock()
	defer k.policyMu.RUnlock()
	if k.Policy() != p {
		return false, nil
	}
	return true, commit()
}

// commitAfterVoteWhileInForce is commitWhileInForce for a commit that
// follows a durable vote: a full commit queue is waited out (backoff as in
// updateAfterVote), with policyMu released while it waits. Held, it would
// keep a reload waiting on the queue, and every new call's commit behind
// that reload (a waiting writer stops new readers). A reload that lands
// during the wait ends it: inForce is false.
func (k *Kernel) commitAfterVoteWhileInForce(ctx context.Context, p *policy.Policy, commit func() error) (inForce bool, err error) {
	backoff := queueFullBackoffMin
	for {
		inForce, err = k.commitWhileInForce(p, commit)
		if !inForce || !errors.Is(err, ErrQueueFull) {
			return inForce, err
		}
		if k.sleep(ctx, backoff) != nil {
			return true, err // shutting down or cancelled: the full queue's error stands
		}
		backoff = min(2*backoff, queueFullBackoffMax)
	}
}
