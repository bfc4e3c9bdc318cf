package receipt

import "testing"

// auto_approved (with review_required) says the kernel's own advisory vote
// decided the call at its deadline, no person: the kernel writes it only
// then (chainReceipt: advisory), and `chio receipt stats` sets such
// receipts apart from the people. verify held a kernel-key token to the
// flag, but not the flag to a kernel-key token: an auto_approved receipt
// whose deciding token a person signed verified OK, a person's decision
// filed as no one's, for review.
func TestVerifyAutoApprovedDecidedByAPerson(t *testing.T) {
	rs := fxReceipts()
	rs[1].Metadata["deadline"] = 1_700_000_003 // passed when rc-4 decides
	rs[3].Metadata["auto_approved"], rs[3].Metadata["review_required"] = true, true
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, nil)) // at-1, by the fixture's approver
	if rep.OK() {
		t.Fatalf("an auto_approved receipt decided by a person's token verifies OK")
	}
	expectProblem(t, rep, 5, "flagged auto_approved but its deciding token at-1 is signed by "+fxApprover.Public().String())
}
