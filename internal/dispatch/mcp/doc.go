// Package mcp connects chio to upstream MCP servers: the tool servers of
// `[[servers]] transport = "mcp"`. It uses the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) for the protocol and owns only
// chio's part around it:
//
//   - supervision: a stdio server (`command = [...]`) is started, watched and
//     restarted with capped exponential backoff; a Streamable HTTP server
//     (`url = ...`) is reconnected the same way (supervise.go);
//   - discovery: tools/list on every (re)connect and on
//     notifications/tools/list_changed, with limits on what an upstream may
//     list, and each tool's inputSchema compiled for validation (catalog.go);
//   - dispatch: exactly one tools/call per kernel Dispatch, the request id in
//     _meta as an idempotency key, failures classified as
//     *kernel.DeliveryError (classify.go), and the upstream's CallToolResult
//     recorded as the exact JSON bytes it sent (tap.go).
//
// Elicitation and sampling requests from an upstream are refused: the client
// advertises neither capability and installs no handler, so the SDK answers
// them with an error. Only a signed approval token ever approves a call.
//
// This package must not import internal/httpapi or the kernel's store; the
// kernel sees it only as a kernel.Dispatcher (through internal/dispatch) and
// a kernel.Guard (SchemaGuard).
package mcp
