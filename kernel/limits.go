package kernel

import "time"

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
	// MaxCapabilityTTL bounds how long an issued capability may live.
	MaxCapabilityTTL = 365 * 24 * time.Hour
	// GuardBudget is each guard's time budget; overrunning it is a Deny.
	GuardBudget = 50 * time.Millisecond
	// CapabilityCacheSize is how many verified capabilities are remembered
	// (by hash of their exact bytes) to skip re-verifying signatures.
	CapabilityCacheSize = 8192
	// ConsumedCacheSize sizes the replay LRU: peak approvals/s × token TTL
	// (≈ 18/s sustained for an hour) before lookups fall through to the store.
	ConsumedCacheSize = 65536
	// MaxToolOutputBytes bounds a tool output kept in the call record.
	MaxToolOutputBytes = 1 << 20
	// MaxToolErrorLen bounds a tool error kept on the call and receipts.
	MaxToolErrorLen = 2048
	// DefaultRetryDeadline bounds retries of transient delivery failures
	// when the policy sets no retry_deadline_seconds.
	DefaultRetryDeadline = 30 * time.Second
	// RetryBackoffMin and RetryBackoffMax bound the (jittered, doubling)
	// wait between delivery attempts.
	RetryBackoffMin = 100 * time.Millisecond
	RetryBackoffMax = 2 * time.Second
	// RecoveryWorkers bounds how many in-flight calls recovery finishes at
	// once (chiod serves meanwhile).
	RecoveryWorkers = 8
	// MaxSummaryLen bounds the one-line summary approvers are shown.
	MaxSummaryLen = 512
	// MaxCancelReasonLen bounds a cancellation's reason.
	MaxCancelReasonLen = 1024
)
