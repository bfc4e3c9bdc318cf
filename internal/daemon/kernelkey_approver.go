package daemon

import (
	"fmt"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// kernelKeyNotApprover refuses a policy that names the kernel's own key
// (kernel.pem) as an approver of a grant. The kernel counts a vote signed
// with its key only as its own auto_approve_advisory vote at a deadline,
// so such an approver could never vote (a quorum needing them is never
// met); and the holder of kernel.pem, who can mint any agent key a
// capability, would approve that agent's calls, as an authority key may
// not (policy validation). chio policy check cannot know the key, so chiod
// checks at start and at every reload.
func kernelKeyNotApprover(p *policy.Policy, kernelKey keys.PublicKey) error {
	for i := range p.Grants {
		g := &p.Grants[i]
		if g.Approval == nil {
			continue
		}
		if ap, ok := g.Approval.ApproverByKey(kernelKey); ok {
			return fmt.Errorf("grant %q: approver %q has this chiod's kernel key %s (kernel.pem), which signs receipts and capabilities "+
				"and never votes for a person: give the approver a key of their own (chio keygen)", g.ID, ap.DisplayName, kernelKey)
		}
	}
	return nil
}
