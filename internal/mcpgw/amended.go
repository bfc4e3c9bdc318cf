package mcpgw

import (
	"encoding/json"
	"fmt"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/kernel"
)

// MetaAmendedArguments is set on the result of a call an approver amended:
// the arguments the tool was sent instead of the agent's (the canonical
// bytes the receipt's parameter_hash covers).
const MetaAmendedArguments = "chio/amended_arguments"

// tellAmended adds to the result of an allowed call, when an approver
// amended it, what GET /v1/calls/{id} and `chio await` say as
// approval.amended_arguments: a model reads only the result, and would
// otherwise take the output for that of the arguments it sent. The record
// is read again, so a result is never returned unsaid: a store that cannot
// answer is an error (answer makes it an unreadable result: chio_await
// fetches the outcome later).
func (g *Gateway) tellAmended(out *kernel.Outcome, r *mcpsdk.CallToolResult) (*mcpsdk.CallToolResult, error) {
	if out.ApprovalRequestID == "" {
		return r, nil
	}
	rec, err := g.o.Kernel.Call(out.RequestID)
	if err != nil {
		return nil, fmt.Errorf("call %s ran; whether an approver amended it cannot be read: %w", out.RequestID, err)
	}
	if rec.RequestedParameterHash == "" { // set only by an amendment (kernel/resume.go)
		return r, nil
	}
	r.Content = append(r.Content, &mcpsdk.TextContent{Text: fmt.Sprintf(
		"chio: an approver amended this call before it was sent (approval %s): the tool was sent these arguments, "+
			"not the ones you sent: %s", out.ApprovalRequestID, rec.Arguments)})
	if r.Meta == nil {
		r.Meta = mcpsdk.Meta{}
	}
	r.Meta[MetaAmendedArguments] = json.RawMessage(rec.Arguments)
	return r, nil
}
