package kernel

import (
	"time"

	"github.com/chiokernel/chio/policy"
)

const (
	// MaxProofSkew is how far a call proof's issued_at may sit from now.
	MaxProofSkew = 60 * time.Second
	// MaxRequestIDLen bounds request ids (they key the store).
	MaxRequestIDLen = 128
	// MaxArgumentsBytes bounds a call's canonical arguments.
	MaxArgumentsBytes = 256 << 10
	// MaxCapabilityBytes bounds a presented capability object.
	MaxCapabilityBytes = 64 << 10
	// MaxCapabilityGrants bounds grants per capability.
	MaxCapabilityGrants = 1024
	// MaxLabelLen bounds a capability's label (the agent's name for humans).
	MaxLabelLen = 64
	// MaxCapabilityTTL bounds how long an issued capability may live.
	MaxCapabilityTTL = 365 * 24 * time.Hour
	// GuardBudget is each guard's time budget; overrunning it is a Deny.
	GuardBudget = 50 * time.Millisecond
	// CapabilityCacheSize is how many verified capabilities are remembered
	// (by hash of their exact bytes) to skip re-verifying signatures.
	CapabilityCacheSize = 8192
	// VerifyKeyCacheSize is how many agents' precomputed proof-verification
	// keys are kept (~10 KiB each); a miss costs ~5 µs to rebuild.
	VerifyKeyCacheSize = 1024
	// ConsumedCacheSize sizes the replay LRU: peak approvals/s × token TTL
	// (≈ 18/s sustained for an hour) before lookups fall through to the store.
	ConsumedCacheSize = 65536
	// MaxLiveBatchesPerApprover bounds the standing approvals one approver
	// key may hold live (unexpired, unrevoked, not used up) at once. Every
	// allow under a grant batches can cover reads the live batches in its
	// commit; expired, revoked and used-up ones cost nothing and do not
	// count. (On PostgreSQL, replicas creating batches for one key at the
	// same instant may each pass the check once.)
	MaxLiveBatchesPerApprover = 100
	// DefaultMaxCallsInFlightPerAgent bounds one agent's calls running in
	// chiod at once (Config.MaxCallsInFlightPerAgent, calls_inflight.go):
	// each holds its arguments (up to MaxArgumentsBytes, with the request
	// body that carried them) and a goroutine until its tool answers, even
	// after its client has gone. Four times an agent's long-polls; over
	// it a call is refused with nothing decided (HTTP 429).
	DefaultMaxCallsInFlightPerAgent = 256
	// MaxToolOutputBytes bounds a tool output kept in the call record.
	MaxToolOutputBytes = 1 << 20

	// maxPercentDecodes is how many rounds of percent-decoding a path is
	// judged through; a string that still decodes to a path after that is
	// refused rather than guessed at.
	maxPercentDecodes = 3
	// maxExtraPercentDecodes bounds the rounds decoded past that limit to
	// see whether a path hides deeper; a string still encoded after them is
	// refused too. Unbounded, "%2525…25" (two bytes shorter a round) made
	// one 256 KiB argument cost minutes of CPU.
	maxExtraPercentDecodes = 16
	// maxQuotedPath bounds how much of an argument a receipt quotes.
	maxQuotedPath = 80
	// maxAmountLiteral bounds the spelling of an amount before it is parsed
	// exactly; 2^53 has 16 digits, so anything much longer is not an amount.
	maxAmountLiteral = 64
	// maxConditionError bounds the evaluation error quoted in a receipt.
	maxConditionError = 160
	// MaxToolErrorLen bounds a tool error kept on the call and receipts.
	MaxToolErrorLen = 2048
	// DefaultRetryDeadline bounds retries of transient delivery failures
	// when the policy sets no retry_deadline_seconds.
	DefaultRetryDeadline = 30 * time.Second
	// RetryBackoffMin and RetryBackoffMax bound the (jittered, doubling)
	// wait between delivery attempts.
	RetryBackoffMin = 100 * time.Millisecond
	RetryBackoffMax = 2 * time.Second
	// MaxMaybeReachedAttempts bounds the attempts of one call that may
	// have reached the tool (a timeout, a server that died mid-call),
	// counting one made before a restart. A call that crashes its server
	// would otherwise be re-sent at every reconnect until the retry
	// deadline, keeping the server down for every other call.
	MaxMaybeReachedAttempts = 3
	// RecoveryWorkers bounds how many in-flight calls recovery finishes at
	// once (chiod serves meanwhile).
	RecoveryWorkers = 8
	// SettleDrainTimeout bounds how long Close waits for the settle commits
	// of calls already answered (settling.go); one still running after it
	// is finished by recovery at the next start, like a crash.
	SettleDrainTimeout = 10 * time.Second
	// MaxSummaryLen bounds the one-line summary approvers are shown.
	MaxSummaryLen = 512
	// MaxCancelReasonLen bounds a cancellation's reason.
	MaxCancelReasonLen = 1024

	// MaxIntentBytes bounds a governed intent as received, before it is
	// parsed: it is stored and replayed to every approver view as sent, so
	// its padding counts too.
	MaxIntentBytes = 8 << 10
	// MaxPurposeLen bounds governed_intent.purpose (bytes). Approvers read it
	// in Slack, email and the dashboard; the parameter hash covers it, so an
	// over-long purpose is refused, never truncated.
	MaxPurposeLen = 1 << 10
	// MaxIntentContextBytes bounds governed_intent.context as received.
	MaxIntentContextBytes = 4 << 10
	// MaxActionCategoryLen bounds governed_intent.action_category: the
	// longest category a policy can name (tools and
	// require_approval_for_actions use policy labels).
	MaxActionCategoryLen = policy.MaxNameLen
)

// Event subscribers (events.go). Live views and long-polls draw from
// separate pools, so a flood of one can never starve the other.
const (
	// MaxStreamSubscribers bounds live views (SSE streams) across every
	// credential; httpapi bounds each credential's share far below it.
	MaxStreamSubscribers = 256
	// StreamBuffer is how many events a live view may fall behind before it
	// is dropped (it reconnects and re-reads state). Buffered events are
	// shared, encoded once per publish, so this bounds references, not copies.
	StreamBuffer = 64
	// MaxWaitSubscribers bounds long-polls (GET /v1/calls/{id}?wait=, chio
	// await, the SDK's Await).
	MaxWaitSubscribers = 4096
	// WaitBuffer is a long-poll's buffer: it drains continuously and only
	// looks for its own call, and a drop only makes it re-read its call.
	WaitBuffer = 16
)
