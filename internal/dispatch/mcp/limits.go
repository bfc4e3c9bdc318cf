package mcp

import "time"

// Limits on what an upstream MCP server may send. An upstream is a program
// chio does not control: everything it says meets a limit before a parser.
const (
	// MaxMessageBytes bounds one JSON-RPC message from an upstream (a stdio
	// line, an HTTP response body, one SSE event).
	MaxMessageBytes = 4 << 20
	// MaxResultBytes bounds the CallToolResult recorded for a call. It is the
	// kernel's own cap on tool output (kernel.MaxToolOutputBytes is checked
	// again there); larger results are a tool error, never truncated.
	MaxResultBytes = 1 << 20
	// MaxTools bounds one server's tool list; a server listing more is
	// refused whole rather than cut (a cut list would hide tools at random).
	MaxTools = 1000
	// MaxListPages bounds tools/list pagination.
	MaxListPages = 100
	// MaxSchemaBytes bounds one tool's inputSchema (as JSON).
	MaxSchemaBytes = 64 << 10
	// MaxDescriptionBytes bounds a tool's description; longer ones are cut
	// at a rune boundary (descriptions are shown to models, not trusted).
	MaxDescriptionBytes = 8 << 10
	// MaxToolNameLen is MCP's own limit on tool names.
	MaxToolNameLen = 128
	// maxToolErrorText is how much of an isError result's text goes into
	// the receipt's tool_error; the full result is the call's output.
	maxToolErrorText = 512
	// maxStderrLine bounds one logged line of a stdio server's stderr.
	maxStderrLine = 2048
)

// Supervision defaults (Options overrides them).
const (
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	// DefaultStableAfter: a connection that lived this long resets the
	// backoff, so one crash an hour does not wait 30 s to restart.
	DefaultStableAfter = 30 * time.Second
	// DefaultConnectTimeout bounds start-up: process start, initialize and
	// the first tools/list.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultCallTimeout applies when the server sets no timeout_seconds.
	DefaultCallTimeout = 10 * time.Second
	// killGrace is how long a stdio server has to exit after its stdin is
	// closed and it is sent SIGTERM, before SIGKILL.
	killGrace = 2 * time.Second
	// keepAlive pings Streamable HTTP servers so a dead one is noticed
	// between calls (a stdio server's death is an EOF).
	keepAlive = 15 * time.Second
)
