package slack

import (
	"encoding/json"

	"github.com/chiokernel/chio/approval"
)

// amendedArguments returns the arguments an approving vote amended the
// call to (its token's amended_arguments), nil when it amended nothing. The
// tool receives those instead of the request's: a message that showed the
// request's arguments as approved would tell the channel something other
// than what ran. The member is read by its exact name, as the kernel's
// verifier reads it.
func amendedArguments(v approval.Vote) json.RawMessage {
	if v.Decision != approval.DecisionApproved || len(v.Token) == 0 {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(v.Token, &members) != nil {
		return nil
	}
	a := members["amended_arguments"]
	if len(a) == 0 || string(a) == "null" {
		return nil
	}
	return a
}
