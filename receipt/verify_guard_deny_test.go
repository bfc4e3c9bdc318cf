package receipt

import "testing"

// A deny by any guard other than human-approval that names a deciding
// token is a call a person approved and the kernel then stopped (a reload
// that no longer counts the approvals, a revoked capability, a refused
// amendment, the deadline's advisory vote no longer in force): its
// deciding token approves. Only a human-approval deny is decided by a
// denial. verify checked the deciding token's decision of allows and
// human-approval denies only: a denial as the deciding token of an
// approval-policy or capability deny verified OK, a person's refusal
// filed as the kernel's.
func TestVerifyGuardDenyDecidedByAnApproval(t *testing.T) {
	for _, guard := range []string{"approval-policy", "capability"} {
		t.Run(guard, func(t *testing.T) {
			rs := fxReceipts()
			rs[5].Decision.Guard = guard // rc-6, decided by at-2, which denies
			rep := verifyBytes(t, fxExport(t, rs, fxKernel, nil))
			expectProblem(t, rep, 0, `receipt is deny by guard `+guard+` (an approved call the kernel stopped) but the deciding token at-2 says "denied"`)
		})
	}
}
