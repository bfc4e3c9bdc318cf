package approval

import "testing"

// Progress counts as the kernel does: a pending request counts only the
// votes of approvers it trusts now; a resolved one, every recorded vote.
func TestProgressCountsTrustedVotesWhilePending(t *testing.T) {
	r := &Request{Status: StatusPending, TrustedApprovers: []string{"ed25519:a", "ed25519:b"},
		Votes: []Vote{{Approver: "ed25519:a", Decision: DecisionApproved}, {Approver: "ed25519:gone", Decision: DecisionApproved},
			{Approver: "ed25519:gone2", Decision: DecisionDenied}}}
	if a, d := r.Progress(); a != 1 || d != 0 {
		t.Fatalf("pending: %d approved, %d denied; want 1, 0 (votes of removed approvers do not count)", a, d)
	}
	r.Status = StatusApproved
	if a, d := r.Progress(); a != 2 || d != 1 {
		t.Fatalf("resolved: %d approved, %d denied; want every recorded vote, 2 and 1", a, d)
	}
}
