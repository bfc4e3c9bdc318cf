package kernel

// A reload that makes the votes already recorded on a pending request
// meet the quorum in force resolves it, as the vote that met the quorum
// would have: the approvals that count are signed by keys the policy in
// force trusts at the request's tier, against its quorum (never looser
// than when parked, quorumsNow), with no deny_quorum met. Left pending,
// such a request waited for an approving vote that may never come (every
// approver named may have voted) and was then denied, or auto-approved,
// at its deadline although the policy in force approves it. The reload is
// no one's vote: the deciding vote is the latest counted approval that
// meets the quorum with those agreeing with it (on a question, the same
// answers), whose signed token the allow receipt names, and the resolution commits only
// while the policy that judged it is in force (reconcile).

import (
	"context"
	"log/slog"
	"slices"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/policy"
)

// approvingVoteNow returns the vote that resolves pending req as approved
// under policy p with the votes it already holds, and its token: the
// latest approval among the votes p counts whose agreeing approvals
// (AgreeingWith: on a question, those giving its answers) meet the quorum
// in force, when the denials do not meet deny_quorum. It returns nil when
// none does, or when that vote's stored token no longer parses (the
// request then stays pending: a call is never run on a token nobody can
// check).
func approvingVoteNow(p *policy.Policy, req *approval.Request) (*approval.Vote, *approval.Token) {
	now, ok := withApproversNow(p, req)
	if !ok || req.Status != approval.StatusPending {
		return nil, nil
	}
	approved, denied := now.CountsAmong(now.TrustedApprovers)
	if denied >= now.DenyQuorum || approved < now.Quorum {
		return nil, nil
	}
	for i := len(req.Votes) - 1; i >= 0; i-- {
		v := &req.Votes[i]
		if v.Decision != approval.DecisionApproved || !slices.Contains(now.TrustedApprovers, v.Approver) {
			continue
		}
		if now.AgreeingWith(now.TrustedApprovers, v) < now.Quorum {
			// A question whose counted approvals give different answers (a
			// voter trusted again disagrees): this answer has no quorum,
			// but an earlier one may (the latest approval can be the odd
			// one out), and that one decides, as its last voter would have.
			continue
		}
		var tok approval.Token
		if canon.Unmarshal(v.Token, &tok) != nil {
			return nil, nil
		}
		return v, &tok
	}
	return nil, nil
}

// resumeInBackground hands a call a reconcile approved (committed as
// dispatching, with no decision) to recovery's workers, which take it to
// its decision as recordVote does after an approving vote: the guards run
// again under the policy in force and the allow (or deny) receipt is
// chained, naming the deciding vote (the one the resolution's TokenID
// names: decidingVote) and every vote; then the call is sent and settled.
// Neither the reload nor start-up waits for that (a tool may hang). The
// call is queued for recovery before the reconcile's live-vote
// registration ends, so no other recovery pass resumes it meanwhile; a
// failed resume is logged, counted (Recovery) and, on a shared store,
// retried by this replica's sweep (uncertainCalls). Once Close has begun
// nothing starts: the call stays dispatching for the next start.
func (k *Kernel) resumeInBackground(ctx context.Context, req *approval.Request, rec *CallRecord) {
	k.stopTimer(req.ApprovalID)
	// Not started when a recovery pass that read the call dispatching (a
	// store heal's) has queued it already: that worker resumes it.
	if !k.recoverInBackground(context.WithoutCancel(ctx), rec) && k.stopping() {
		slog.Info("shutting down: a call approved by the reload is finished at the next start", "request_id", rec.RequestID)
	}
}
