package receipt

import "testing"

// An allow that ends an approval chain was decided by a vote (a person's,
// or the kernel's advisory vote at the deadline), and a human-approval
// deny by a person's denial: the kernel names that vote on the receipt
// (kernel chainReceipt: approval_token_id, approver). One that names no
// deciding token leaves the call approved (or denied) by no one the
// export can show, yet verify passed it: with the evidence for its request
// dropped too, nothing was checked at all.
func TestVerifyChainFinalWithoutDecidingToken(t *testing.T) {
	for name, c := range map[string]struct {
		idx int // rs[idx] is the final receipt
		ev  func([]any) []any
	}{
		"allow":               {3, func(ev []any) []any { return ev[1:] }},                          // rc-4, ar-1's evidence dropped
		"human-approval deny": {5, func(ev []any) []any { return append([]any{ev[0]}, ev[2:]...) }}, // rc-6, ar-2's
	} {
		t.Run(name, func(t *testing.T) {
			rs := fxReceipts()
			for _, k := range []string{"approval_token_id", "approver", "approver_display_name", "channel"} {
				delete(rs[c.idx].Metadata, k)
			}
			rep := verifyBytes(t, fxExport(t, rs, fxKernel, c.ev(fxEvidence(t))))
			if rep.OK() {
				t.Fatalf("%s ending an approval chain with no deciding token verifies OK", name)
			}
			expectProblem(t, rep, c.idx+2, "names no deciding token")
		})
	}
}
