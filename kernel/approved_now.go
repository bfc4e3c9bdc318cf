package kernel

// An approved call is run only while its approvals still approve it under
// the policy in force when it is decided. The vote that approved it was
// judged by the policy in force at the vote's commit (votes.go), but the
// allow decision commits later: at once on the live path, yet after a
// reload that lands in between, and at the next start when chiod died
// between the vote and the decision (recoverApproved). A reload that
// removed an approver's key (a compromised key) stops that key's votes
// counting, and one that raised the quorum applies to calls already
// parked (approvers.go): both hold for an approved call not yet decided,
// which is denied rather than run on votes the policy no longer counts.
// The kernel's own advisory vote counts only while the policy in force
// still answers the deadline with auto_approve_advisory: a file that now
// denies at the deadline would never have cast it.

import (
	"fmt"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
)

// approvedNow checks that the votes recorded on approved req still resolve
// it as approved under policy p, as they would a pending request
// (approvingVoteNow): some approver of the grant may still decide it, the
// denials counted do not meet the deny_quorum in force, and the approvals
// counted meet the quorum in force (never looser than req's). A request
// the kernel's advisory vote approved (byAdvisory) needs instead that p
// still auto-approves at its deadline (advisoryInForce; no human had
// denied it, or that vote would not have committed). It returns the guard
// and reason of the deny otherwise.
func approvedNow(p *policy.Policy, req *approval.Request, byAdvisory bool) (guard, reason string, ok bool) {
	if byAdvisory {
		if !advisoryInForce(p, req) {
			return GuardApprovalTimeout, "under the policy in force the deadline no longer auto-approves (timeout_action); the advisory approval no longer counts", false
		}
		return "", "", true
	}
	// Counted at the tier a pending request would wait at under p: one
	// left to nobody but the calling agent is passed over (skip_tiers.go).
	now, ok := withApproversNow(p, atDecidingTier(p, req))
	if !ok {
		return GuardApprovalPolicy, fmt.Sprintf("under the policy in force nobody may decide requests of grant %s; the approval no longer counts", req.PolicyID), false
	}
	approved, denied := now.CountsAmong(now.TrustedApprovers)
	// These denials are the policy's, not a person's: the receipt names
	// the approving vote that decided the request, and a deny by
	// human-approval means its deciding token denied (receipt verify holds
	// it to that; `--guard human-approval` lists people's refusals).
	switch {
	case denied >= now.DenyQuorum:
		return GuardApprovalPolicy, fmt.Sprintf("under the policy in force the denials recorded meet deny_quorum %d", now.DenyQuorum), false
	case approved < now.Quorum:
		return GuardApprovalPolicy, fmt.Sprintf("under the policy in force %d of the approvals recorded count, short of quorum %d (an approver removed, or the quorum raised, since they voted)",
			approved, now.Quorum), false
	case len(req.Votes) > 0 && now.AgreeingWith(now.TrustedApprovers, decidingVote(req)) < now.Quorum:
		return GuardApprovalPolicy, fmt.Sprintf("under the policy in force fewer than quorum %d of the approvals counted give the deciding answers "+
			"(an approver who answered otherwise is trusted again, or the quorum raised, since they voted)", now.Quorum), false
	}
	return "", "", true
}
