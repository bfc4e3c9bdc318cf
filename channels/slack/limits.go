package slack

import "time"

// Limits on what the interactions endpoint accepts and remembers.
const (
	// MaxInteractionBody bounds the raw body read before anything else.
	MaxInteractionBody = 64 << 10
	// DefaultBodyReadTimeout bounds how long reading that body may take
	// (the API's own httpapi.BodyReadTimeout): it is read before the
	// signature is checked, and chiod's server has no ReadTimeout (it would
	// cut SSE streams), so a client trickling a body would otherwise hold a
	// connection and a goroutine for as long as it liked.
	DefaultBodyReadTimeout = 30 * time.Second
	// SignatureWindow is how far X-Slack-Request-Timestamp may be from the
	// injected clock, either way (Slack's recommendation).
	SignatureWindow = 5 * time.Minute
	// MaxSeenSignatures bounds the replay cache. When it is full of
	// signatures still inside the window, new clicks are refused (503):
	// fail closed rather than forget a signature that could be replayed.
	MaxSeenSignatures = 100_000
	// DefaultAckTimeout is how long a click waits for its vote before the
	// endpoint answers 200 anyway (Slack wants an answer within 3 s); the
	// vote goes on and its outcome arrives as an ephemeral message.
	DefaultAckTimeout = 2500 * time.Millisecond
	// CustodialTokenTTL is the lifetime of a token chiod signs for a click:
	// it is presented at once, so a short life is plenty.
	CustodialTokenTTL = 5 * time.Minute
	// MessageRetention is how long a resolved request's message reference
	// is kept on disk (late deliveries of old events find it and do not
	// post a second message).
	MessageRetention = 7 * 24 * time.Hour
)

// Slack's own limits on Block Kit text.
const (
	maxSectionText = 2900 // section text (3000)
	maxFieldText   = 1900 // section field (2000)
	maxFallback    = 3000 // top-level text of a message with blocks
	maxContextText = 1900
)
