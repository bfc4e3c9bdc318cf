package mcpgw

import (
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/kernel"
)

// Limits on what MCP clients may send and how long they may hold chiod.
const (
	// MaxRequestBytes bounds one HTTP request to /mcp (one JSON-RPC
	// message): the size of POST /v1/calls plus room for _meta.
	MaxRequestBytes = 1<<20 + 64<<10
	// MaxAnswerBytes bounds one message the bridge reads from chiod: the
	// largest answer chiod can send. chiod re-encodes what it answers, and
	// the MCP SDK escapes <, > and & as \u003c, six bytes for one: a tool's
	// output as chio records it (at most 1 MiB, from any transport) may
	// reach the bridge six times as large, and an amended call's result
	// carries the amended arguments twice more (its text and _meta).
	// Room for chio's own words and the JSON-RPC and SSE framing on top.
	MaxAnswerBytes = 6*(max(mcp.MaxResultBytes, dispatch.MaxResponseBytes)+2*kernel.MaxArgumentsBytes) + 64<<10
	// MaxStdioLineBytes bounds one message (one line) an MCP client writes
	// to `chio mcp serve`'s stdin: the MCP SDK's own bound for its stdio
	// transport. A longer line is answered with an error and skipped
	// (StdioTransport).
	MaxStdioLineBytes = mcpsdk.DefaultMaxLineLength
	// MaxSessionTokenBytes bounds the bearer before it is decoded.
	MaxSessionTokenBytes = 16 << 10
	// MaxSessionTTL is the longest a session token may live.
	MaxSessionTTL = time.Hour
	// MaxSkew is how far a token's issued_at may lie in the future.
	MaxSkew = 60 * time.Second
	// DefaultPendingWait is how long a parked tools/call is held open
	// before it answers "pending" (a client may ask for less or more in
	// _meta["chio/wait_seconds"], up to MaxWait).
	DefaultPendingWait = 20 * time.Second
	// MaxWait caps a pending wait and one chio_await.
	MaxWait = 10 * time.Minute
	// DefaultProgressEvery spaces progress notifications while waiting.
	DefaultProgressEvery = 5 * time.Second
	// MaxWaitsPerAgent bounds an agent's concurrent waits (they hold kernel
	// event subscriptions, which dashboards and long-polls share); over it
	// a parked call answers "pending" at once.
	MaxWaitsPerAgent = 64
	// MaxAgents bounds the per-agent MCP servers chiod keeps; idle ones are
	// pruned first.
	MaxAgents = 10_000
	// SessionIdle closes an MCP session with no requests for this long
	// (Options.SessionIdle).
	SessionIdle = 30 * time.Minute
	// DefaultMaxSessionsPerAgent bounds one agent's open MCP sessions
	// (Options.MaxSessionsPerAgent): a client needs one, a few restarts
	// that did not end theirs leave a few more. Over it a new session is
	// refused with 429.
	DefaultMaxSessionsPerAgent = 16
	// DefaultMaxSessions bounds all open MCP sessions (Options.MaxSessions):
	// each holds a goroutine and ~7 KiB until it ends, and one more
	// goroutine watches it, so about 160 MiB at this bound. Over it a new
	// session is refused with 503.
	DefaultMaxSessions = 8192
	// SessionRetryAfter is the Retry-After sent with a refused session
	// (429 or 503), as chiod's API sends with its other refusals of a
	// share that frees up (httpapi.WaitRetryAfter, StreamRetryAfter).
	SessionRetryAfter = 10 * time.Second
	// sessionCacheSize bounds the verified-bearer cache.
	sessionCacheSize = 4096
	// MaxExposedNameLen is the longest tool name offered to clients.
	MaxExposedNameLen = 128
)
