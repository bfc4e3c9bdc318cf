package kernel

// Which recorded votes a decision counts. A final receipt lists every vote
// of its request ("approvers", "dissenters") and names in "uncounted"
// those the deciding policy does not count; the request's resolution
// carries the same names (approval.Resolution.Uncounted), written in the
// commit that decides it and again in the one that chains its final
// receipt, so every view of a resolved request (Slack, `chio approval
// show`) counts the votes its receipt counts, never every recorded vote.

import (
	"slices"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// uncountedVoters names the voters of req whose votes policy p does not
// count when vote decides it: a key p no longer trusts at req's tier, or
// at the tier it is passed over to when p leaves req's to the calling
// agent alone (recorded before a reload removed it), or an approval of a question
// that gave other answers than the deciding approval (counted answers
// disagree once a reload trusts a voter again: sameAnswers). The kernel's
// own advisory vote is never uncounted. None (nil) without a deciding
// vote or with a single vote: the receipt then lists no votes, its
// deciding token is the one vote.
func (k *Kernel) uncountedVoters(p *policy.Policy, req *approval.Request, vote *approval.Vote) []string {
	if vote == nil || len(req.Votes) <= 1 {
		return nil
	}
	// Counted at the tier req is decided at under p: one p leaves to
	// nobody but the calling agent is passed over (skip_tiers.go), as
	// deniedNow and approvedNow count it; at the tier passed over the
	// deciding vote itself would be named uncounted.
	trusted, _, _ := approversNow(p, atDecidingTier(p, req))
	uncounted := []string{}
	for i := range req.Votes {
		v := &req.Votes[i]
		otherAnswers := req.Kind == approval.KindQuestion && vote.Decision == approval.DecisionApproved &&
			v.Decision == approval.DecisionApproved && !approval.SameAnswers(v, vote)
		if v.Approver != k.pub.String() && (!slices.Contains(trusted, v.Approver) || otherAnswers) {
			uncounted = append(uncounted, v.Approver)
		}
	}
	return uncounted
}

// receiptUncounted returns the voters final receipt r names in
// "uncounted" (chainReceipt), for the resolution committed with it.
func receiptUncounted(r *receipt.Receipt) []string {
	u, _ := r.Metadata["uncounted"].([]string)
	return u
}
