package receipt

import "testing"

// A standing (batch) approval allows a call when it arrives, instead of
// parking it (kernel tryBatch): its allow names batch_approval_id and no
// suspension, approval request or approval token. verify checked such a
// receipt against the batch only: an approval chain's allow that also
// named a batch had its deciding token checked by nothing, so the token
// could be missing from the export (or be anyone's) and the log verified.
func TestVerifyBatchReceiptIsNoApprovalChain(t *testing.T) {
	rs := fxReceipts()
	rs[3].Metadata["batch_approval_id"] = "bt-1" // rc-4 ends ar-1's chain, decided by at-1
	ev := fxEvidence(t)[1:]                      // at-1 (ar-1's evidence) is not in the export
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev))
	expectProblem(t, rep, 0, "receipt names batch_approval_id bt-1 and approval_request_id ar-1: the kernel allows a call under a standing approval when it arrives, never one it parked")
}
