package approval

import "time"

const (
	// MaxApprovalTTL caps a token's lifetime (seed: MAX_APPROVAL_TTL_SECS),
	// which bounds how long the replay store must remember it.
	MaxApprovalTTL = 3600 * time.Second
	// MinApprovalTTL is the shortest lifetime a token can be signed for:
	// its times are whole seconds, so a shorter one can expire as issued.
	MinApprovalTTL = time.Second
	// MaxSkew is how far issued_at may sit in the future.
	MaxSkew = 60 * time.Second
	// MaxTokenBytes bounds a presented token before it is parsed.
	MaxTokenBytes = 64 << 10
	// MaxNoteLen bounds the approver's free-text note (bytes).
	MaxNoteLen = 2000
	// MaxAnswers bounds answers to a question request.
	MaxAnswers = 32
	// MaxBatchRespond bounds items in one POST /approvals/batch/respond.
	MaxBatchRespond = 100
)
