package cli

import (
	"encoding/json"

	"github.com/chiokernel/chio/approval"
)

// amendedArguments returns the arguments an approving vote amended the
// call to (its signed token's amended_arguments), nil when it amended
// nothing. The tool receives those instead of the request's: `approval
// show` prints them under the agent's, as Slack's message and the
// dashboard's history say it. The member is read by its exact name, as the
// kernel's verifier reads it.
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
