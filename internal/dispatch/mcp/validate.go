package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/chiokernel/chio/kernel"
)

// SchemaValidator checks a call's arguments against the tool's declared
// input schema. The kernel can take one and call it wherever arguments
// change after the first decision (an approver's amended_arguments), so an
// amendment cannot smuggle in what the schema forbids:
//
//	if err := v.ValidateArguments(rec.Server, rec.Tool, amended); err != nil {
//		return deny(GuardInputSchema, err.Error())
//	}
//
// A nil error means valid, or "not a tool this validator governs" (another
// transport's server).
type SchemaValidator interface {
	ValidateArguments(server, tool string, args json.RawMessage) error
}

var _ SchemaValidator = (*Set)(nil)

// ValidateArguments implements SchemaValidator. For an MCP server it fails
// closed: a tool the server has not listed (or not yet: the server has
// never connected) cannot be validated and so is not valid.
func (s *Set) ValidateArguments(server, tool string, args json.RawMessage) error {
	u, ok := s.ups[server]
	if !ok {
		return nil
	}
	t, ok := u.Tool(tool)
	if !ok {
		if u.tools.Load() == nil {
			return fmt.Errorf("mcp server %q has not listed its tools yet (%s)", server, u.downReason())
		}
		return fmt.Errorf("mcp server %q does not offer a tool %q", server, tool)
	}
	return t.Validate(args)
}

// GuardInputSchema is SchemaGuard's name on deny receipts.
const GuardInputSchema = "mcp-input-schema"

// SchemaGuard is the kernel.Guard form of ValidateArguments: every call to
// an MCP server, from any front door (POST /v1/calls, /mcp), has its
// arguments checked against the tool's inputSchema; it is not an approval
// trigger, so it also runs when an approved call resumes — with the
// amended arguments, when the approver amended them.
type SchemaGuard struct{ V SchemaValidator }

var _ kernel.Guard = SchemaGuard{}

func (SchemaGuard) Name() string   { return GuardInputSchema }
func (SchemaGuard) Approval() bool { return false }

func (g SchemaGuard) Check(r *kernel.Request) (kernel.Result, error) {
	if err := g.V.ValidateArguments(r.Call.Server, r.Call.Tool, r.Call.Arguments); err != nil {
		return kernel.Result{Verdict: kernel.Deny, Guard: GuardInputSchema, Reason: err.Error()}, nil
	}
	return kernel.Result{Verdict: kernel.Allow}, nil
}
