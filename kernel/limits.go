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

	// maxPercentDecodes is how many rounds of percent-decoding a path is
	// judged through; a string that still decodes to a path after that is
	// refused rather than guessed at.
	maxPercentDecodes = 3
	// maxQuotedPath bounds how much of an argument a receipt quotes.
	maxQuotedPath = 80
	// maxAmountLiteral bounds the spelling of an amount before it is parsed
	// exactly; 2^53 has 16 digits, so anything much longer is not an amount.
	maxAmountLiteral = 64
	// maxConditionError bounds the evaluation error quoted in a receipt.
	maxConditionError = 160
)
