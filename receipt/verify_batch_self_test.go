package receipt

import (
	"testing"
)

// A standing approval never covers a call of the agent whose key signed it
// (kernel.batchSigners; a per-call token is refused so too, as
// ErrSelfApproval): an agent cannot approve its own calls in advance. A
// batch-approved receipt whose subject is its batch token's approver is
// such a call, and verify reported it OK.
func TestBatchReceiptOfItsOwnApproverIsAProblem(t *testing.T) {
	rs := fxReceipts()
	rs[6].Subject = fxApprover.Public().String() // rc-7, under bt-1 (any subject), signed by fxApprover
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, nil))
	if rep.OK() {
		t.Fatalf("a call by the key that signed its standing approval verifies OK")
	}
	expectProblem(t, rep, 0, "batch token bt-1 does not cover this receipt: its approver is the receipt's subject")
}
