package mcpgw

import (
	"encoding/json"
	"fmt"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/policy"
)

// permissiveSchema is the inputSchema of a tool that declares none: any
// JSON object. The kernel's guards and the tool judge the arguments, as
// for a call through POST /v1/calls.
var permissiveSchema = json.RawMessage(`{"type":"object"}`)

// policyTools are the tools of the policy's servers that are not MCP
// servers (builtin, http), described as the gateway offers them. Such a
// server lists no tools, so its tools are those the policy knows: the
// ones declared under [[servers.tools]] and a builtin server's own. A
// grant pattern ("*") on an http server may also cover names nobody
// declared; they cannot be listed, so they are not offered.
//
// The description and schema of a builtin tool are the builtin's own
// (dispatch.Builtin); a declared http tool has a plain description and the
// input_schema the policy declares for it, or permissiveSchema when it
// declares none.
func policyTools(p *policy.Policy) []*mcp.Tool {
	var out []*mcp.Tool
	for i := range p.Servers {
		s := &p.Servers[i]
		if s.Transport == policy.TransportMCP {
			continue // its tools are the Catalog's
		}
		for _, t := range p.Tools(s.ID) {
			tool := &mcp.Tool{Server: s.ID, Name: t.Name, InputSchema: permissiveSchema,
				Description: fmt.Sprintf("Tool %q of the %s tool server %q, called through chio.", t.Name, s.Transport, s.ID)}
			if d, ok := dispatch.Builtin(t.Name); ok && s.Transport == policy.TransportBuiltin {
				tool.Description, tool.InputSchema = d.Description, d.InputSchema
			}
			if schema := p.InputSchema(s.ID, t.Name); schema != nil {
				tool.InputSchema = schema.JSON() // only http tools declare one
			}
			out = append(out, tool)
		}
	}
	return out
}
