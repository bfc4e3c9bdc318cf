package httpapi

import (
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

const (
	// MaxCallBody bounds POST /v1/calls (arguments are bounded again inside).
	MaxCallBody = 1 << 20
	// MaxAdminBody bounds admin request bodies.
	MaxAdminBody = 64 << 10
	// MaxListLimit bounds one page of receipts.
	MaxListLimit = 1000
	// DefaultListLimit is a page's size when none is asked for.
	DefaultListLimit = 100
)

// Approval routes (SPEC §6). Every body meets its limit before a parser.
const (
	// MaxRespondBody bounds POST /approvals/{id}/respond: one token plus the
	// few small fields around it.
	MaxRespondBody = approval.MaxTokenBytes + 8<<10
	// MaxBatchRespondBody bounds POST /approvals/batch/respond. Realistic
	// tokens are under 2 KiB; 100 of them fit with room for amendments.
	MaxBatchRespondBody = 2 << 20
	// MaxBatchCreateBody bounds POST /approvals/batch.
	MaxBatchCreateBody = approval.MaxTokenBytes + 1<<10
	// MaxCallWait is the longest long-poll of GET /v1/calls/{id}?wait=.
	MaxCallWait = 60 * time.Second
	// StreamKeepalive is how often an idle SSE stream gets a comment, so
	// proxies and clients can tell a quiet stream from a dead one.
	StreamKeepalive = 15 * time.Second
	// StreamWriteTimeout bounds one SSE frame's write: a client that stops
	// reading is cut instead of pinning a goroutine and a frame forever.
	// At this bound a 256 KiB frame needs ~26 KB/s from the client.
	StreamWriteTimeout = 10 * time.Second
	// MaxConcurrentExports bounds GET /v1/export downloads in progress: each
	// holds a store snapshot (on PostgreSQL a pooled connection) for as
	// long as its reader reads, so a few stalled readers must not take the
	// connections decisions need. Each write of an export is bounded by
	// StreamWriteTimeout, like an SSE frame.
	MaxConcurrentExports = 2
	// MaxExportsPerCredential bounds one credential's exports in progress
	// (a bearer token, an approver): one fewer than all of them, so no one
	// credential, leaked or looping, holds every slot.
	MaxExportsPerCredential = MaxConcurrentExports - 1
	// ExportSlotWait is how long an export waits for its credential's
	// share to be released before it is refused: long enough for chiod to
	// see that the client of a cut export is gone (its next write fails)
	// and end that export, so that a retry right after Ctrl-C or a dropped
	// connection is served.
	ExportSlotWait = 2 * time.Second
	// ExportRetryAfter is the Retry-After sent with a refused export.
	ExportRetryAfter = 10 * time.Second
	// MaxChannelLen bounds the client-declared channel name in receipts.
	MaxChannelLen = 32
	// MaxIDLen bounds ids taken from URL paths before any lookup.
	MaxIDLen = 128
	// BodyReadTimeout bounds how long reading one request body may take.
	BodyReadTimeout = 30 * time.Second
	// MaxWaitsPerAgent bounds one agent's concurrent long-polls, so one
	// agent cannot take the kernel's whole pool of waiters
	// (kernel.MaxWaitSubscribers; SSE streams have a pool of their own).
	MaxWaitsPerAgent = 64
	// MaxWaitsPerToken bounds the concurrent long-polls held through one
	// bearer token (admin, reader), over every agent's calls. Tokens are
	// shared by operators and tools, hence more than an agent's share; the
	// two together take at most an eighth of the kernel's pool.
	MaxWaitsPerToken = kernel.MaxWaitSubscribers / 16
	// WaitRetryAfter is the Retry-After sent with a refused long-poll.
	WaitRetryAfter = 10 * time.Second
	// CallRetryAfter is the Retry-After sent with a call refused because
	// its agent has kernel.DefaultMaxCallsInFlightPerAgent calls running:
	// most calls end in a second or two.
	CallRetryAfter = 1 * time.Second
)

// The SSE stream (stream.go). Every connect costs a replay and every live
// stream a subscriber slot, so both are bounded per connect and per
// credential; the kernel bounds all streams together
// (kernel.MaxStreamSubscribers).
const (
	// MaxStreamReplay bounds the pending requests replayed to a new stream,
	// oldest first. A client that is told the replay was truncated pages
	// GET /approvals/pending.
	MaxStreamReplay = 100
	// MaxStreamReplayBytes bounds a replay's encoded bytes. The oldest
	// request is always sent, so a replay is at most this or one request,
	// whichever is larger (a request is bounded by the kernel's caps on
	// arguments and intent).
	MaxStreamReplayBytes = 256 << 10
	// MaxStreamsPerApprover bounds one approver's concurrent streams, over
	// all of their sessions (signing in again costs only a signature).
	MaxStreamsPerApprover = 8
	// MaxStreamsPerToken bounds concurrent streams per bearer token (admin,
	// reader). Tokens are shared by operators and tools, hence more than an
	// approver's share, still far below the kernel's total.
	MaxStreamsPerToken = 32
	// StreamRetryAfter is the Retry-After sent with a refused stream.
	StreamRetryAfter = 10 * time.Second
)
