// Package mcpgw is chio's MCP front door for agents. chiod serves it at /mcp
// (Streamable HTTP, Gateway); `chio mcp serve` runs the Bridge, which MCP
// clients launch as a stdio server (or reach on a loopback URL) and which
// holds the agent's key.
//
// Trust model. Every tools/call that reaches the kernel carries the same
// proof of possession as POST /v1/calls: an Ed25519 signature by the agent's
// key over the request id, capability, server, tool and parameter hash,
// at most 60 s old. A generic MCP client cannot make one, so the Bridge is
// the generic path: it runs beside the client, holds the key, and signs each
// call; chiod never holds agents' keys, and no bearer alone can make a call.
//
// On /mcp an agent authenticates its session with a bearer it signs itself:
// a chio.mcp-session.v1 token (session.go) that embeds its capability, names
// this kernel's key as audience and lives at most MaxSessionTTL. The session
// token admits tools/list (only the tools the capability grants: upstream
// MCP tools with their own schemas, and the tools the policy knows on its
// builtin and http servers, policytools.go) and chio_await for the agent's
// own calls; each
// tools/call still needs its own proof in _meta["chio/proof"]. The SDK binds
// an MCP session to the identity that opened it, so another agent's token
// cannot ride it.
//
// The three outcomes: allow returns the upstream CallToolResult; deny and
// every other refusal is an isError result naming the reason, guard and
// receipt; a call parked for approval is held up to the pending wait while
// progress notifications flow, then answered with an isError result naming
// the approval id, deadline and summary, and chio_await resumes it.
//
// This package may import the kernel, policy, internal/dispatch (the
// builtin tools' descriptions) and internal/dispatch/mcp; the kernel must
// never import it.
package mcpgw
