package policy

import "testing"

// The authority key signs capabilities: whoever holds it can give any key
// of theirs a capability and so request any call of any grant. Listed as
// an approver too, that one key would ask for a call (through an agent
// key it mints) and approve it alone, as a requester who approves would:
// the file is refused, as a requester listed among the approvers is.
func TestAuthorityKeyIsNotAnApprover(t *testing.T) {
	checkInvalid(t, "authority key is approver",
		approvalHead+"[[grants.approval.approvers]]\npublic_key = \"KEY_A\"  # <-\ndisplay_name = \"A\"\n"+
			"[kernel]\nauthority_key = \"KEY_A\"\n",
		`approver "A" has the key of [kernel] authority_key`)
	// Another key, and no authority key, stay valid.
	for _, ok := range []string{
		approvalHead + approverA + "[kernel]\nauthority_key = \"KEY_B\"\n",
		approvalHead + approverA,
	} {
		if _, err := Parse(doc(ok), "ok.toml"); err != nil {
			t.Fatalf("valid policy refused: %v\n%s", err, ok)
		}
	}
}
