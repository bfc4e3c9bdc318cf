package receipt

import "testing"

// The kernel's own vote (auto_approve_advisory, signed by the kernel key)
// is recorded only by the deadline path, which resolves the request with
// it: it is the deciding vote of an auto_approved receipt, never one vote
// among others. verify checked that of the deciding token only: a receipt
// decided by a person that lists a kernel-key token among its approvers
// (a quorum of 2 made of one person and the kernel) or dissenters verified
// OK.
func TestVerifyKernelVoteOnlyDecides(t *testing.T) {
	lead, kernel := fxApprover.Public().String(), fxKernel.Public().String()
	votes := []vote{{fxApprover, "at-1", "approved"}, {fxKernel, "at-k", "approved"}}
	for _, c := range []struct {
		name string
		meta map[string]any
		says string
	}{
		{"among the approvers", map[string]any{"approvers": []any{lead, kernel}, "dissenters": []any{}}, "approved"},
		{"among the dissenters", map[string]any{"approvers": []any{lead}, "dissenters": []any{kernel}}, "denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := append([]vote(nil), votes...)
			vs[1].says = c.says
			rep := verifyBytes(t, quorumExport(t, c.meta, vs))
			expectProblem(t, rep, 0, "approval ar-1: token at-k is signed by the kernel key, but it is not the deciding token")
		})
	}
}
