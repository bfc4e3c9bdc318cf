package receipt

import "testing"

// An approval chain's final receipt must be for the call the approver's
// token is bound to (the incomplete receipt): an allow for other arguments,
// another tool or another agent, chained to an approved suspension, must
// not verify, nor one that claims an amendment no token made.
func TestFinalReceiptMustBeTheApprovedCall(t *testing.T) {
	cases := map[string]func(r *Receipt){
		"other arguments, no amendment": func(r *Receipt) { r.ParameterHash = fxHash("refund 450000 to attacker") },
		"other tool":                    func(r *Receipt) { r.ToolServer, r.ToolName = "prod", "drop_database" },
		"other agent":                   func(r *Receipt) { r.Subject = "ed25519:" + fxHash("someone else") },
		"other capability":              func(r *Receipt) { r.CapabilityID = "cap-2" },
		"claims an amendment the approver never signed": func(r *Receipt) {
			r.ParameterHash = fxHash("amended by nobody")
			r.Metadata["amended"] = true
			r.Metadata["original_parameter_hash"] = fxHash("req-2")
			r.Metadata["amended_parameter_hash"] = r.ParameterHash
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			rs := fxReceipts()
			mutate(rs[3]) // rc-4: the allow that ends ar-1's chain (token at-1 approved req-2's parameter_hash)
			rep := verifyBytes(t, fxExport(t, rs, fxKernel, nil))
			if rep.OK() {
				t.Fatalf("an allow receipt for something other than what approver's token at-1 approved verifies: chains %d, tokens %d, no problem", rep.Chains, rep.Tokens)
			}
		})
	}
}
