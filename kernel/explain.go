package kernel

import "encoding/json"

// What `chio policy explain` needs to judge a call exactly as Submit does,
// without a store: the same input checks, read from here rather than
// copied, so the two cannot drift apart.

// ParseIntent strictly decodes a governed intent as Submit does, caps
// included (nil when absent).
func ParseIntent(raw json.RawMessage) (*GovernedIntent, error) { return parseIntent(raw) }

// CheckHITLArgs checks the arguments of confirm / ask as Submit does.
func CheckHITLArgs(tool string, args json.RawMessage) error { return checkHITLArgs(tool, args) }
