package approval

import "github.com/chiokernel/chio/receipt"

// Evidence is what an audit export carries for this request: its trusted
// approvers and each counted vote's signed token exactly as presented, so
// an auditor can check the approval offline.
func (r *Request) Evidence() receipt.ApprovalEvidence {
	ev := receipt.ApprovalEvidence{Type: receipt.EvidenceApproval, ApprovalRequestID: r.ApprovalID,
		PolicyID: r.PolicyID, TrustedApprovers: r.TrustedApprovers, Votes: []receipt.EvidenceVote{}}
	for _, v := range r.Votes {
		ev.Votes = append(ev.Votes, receipt.EvidenceVote{Approver: v.Approver, Token: v.Token})
	}
	return ev
}
