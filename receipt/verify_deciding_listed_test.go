package receipt

import "testing"

// "approvers" lists every key that voted as the deciding vote did (kernel
// chainReceipt), so the deciding approver first of all. verify did not
// require it: a final receipt whose approvers leave out the approver it
// names as deciding (who decided is approvers less uncounted) verified OK.
func TestVerifyApproversListTheDecidingApprover(t *testing.T) {
	cfo, sre := fxCFO.Public().String(), fxSRE.Public().String()
	meta := map[string]any{"approvers": []any{cfo}, "dissenters": []any{sre}}
	votes := []vote{{fxApprover, "at-1", "approved"}, {fxCFO, "at-c", "approved"}, {fxSRE, "at-s", "denied"}}
	rep := verifyBytes(t, quorumExport(t, meta, votes))
	expectProblem(t, rep, 0, "receipt names "+fxApprover.Public().String()+" as its deciding approver, but not among its approvers")
}
