package httpapi

import (
	"time"

	"github.com/chiokernel/chio/approval"
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
	// StreamWriteTimeout bounds one SSE write: a client that stops reading
	// is dropped instead of pinning a goroutine forever.
	StreamWriteTimeout = 30 * time.Second
	// MaxStreamSnapshot bounds the pending requests replayed to a new SSE
	// subscriber.
	MaxStreamSnapshot = 1000
	// MaxChannelLen bounds the client-declared channel name in receipts.
	MaxChannelLen = 32
	// MaxIDLen bounds ids taken from URL paths before any lookup.
	MaxIDLen = 128
	// BodyReadTimeout bounds how long reading one request body may take.
	BodyReadTimeout = 30 * time.Second
	// MaxWaitsPerAgent bounds one agent's concurrent long-polls (they share
	// the kernel's subscriber pool with dashboards and SSE clients).
	MaxWaitsPerAgent = 64
)
