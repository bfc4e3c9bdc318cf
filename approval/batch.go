package approval

import (
	"errors"
	"fmt"
	"strings"

	"github.com/chiokernel/chio/policy"
)

// ValidPattern accepts an exact name, "*", or "prefix*" (CheckPattern).
func ValidPattern(p string) bool { return CheckPattern(p) == nil }

// CheckPattern reports why p is not a server or tool pattern: an exact
// name, "*", or "prefix*", at most 256 bytes. The name or prefix must pass
// policy.CheckName, the rule every server and tool name a call carries
// must pass (so no pattern that could match is refused): no control
// characters, spaces, or invisible and text-direction characters. Patterns
// are printed to the people who decide what to revoke (`chio approval
// batch list`); a carriage return or an escape sequence there could
// repaint an unlimited "*" batch as a harmless row.
func CheckPattern(p string) error {
	if p == "" || len(p) > 256 {
		return errors.New("must be 1..256 bytes")
	}
	if i := strings.IndexByte(p, '*'); i >= 0 && i != len(p)-1 {
		return errors.New("may hold \"*\" only at its end (exact, * or prefix*)")
	}
	if name := strings.TrimSuffix(p, "*"); name != "" {
		if err := policy.CheckName(name); err != nil {
			return fmt.Errorf("name %w", err)
		}
	}
	return nil
}

// MatchPattern matches name against an exact, "*" or "prefix*" pattern.
func MatchPattern(p, name string) bool {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return p == name
}

// BatchUsage is a standing approval's durable counters.
type BatchUsage struct {
	Calls       int64 `json:"calls"`
	TotalAmount int64 `json:"total_amount"`
}

// Batch is a stored standing approval.
type Batch struct {
	Token     *BatchToken `json:"token"`
	Raw       []byte      `json:"raw"`
	Usage     BatchUsage  `json:"usage"`
	Revoked   bool        `json:"revoked"`
	RevokedAt int64       `json:"revoked_at,omitempty"`
	CreatedAt int64       `json:"created_at"`
}

// Retired reports whether the batch can never cover a call again, at any
// time: it is revoked, or every call it allows is used. (A spent money
// total is not retirement: Covers still admits a call of amount 0.)
func (b *Batch) Retired() bool {
	return b.Revoked || (b.Token.MaxCalls != nil && b.Usage.Calls >= *b.Token.MaxCalls)
}

// Live reports whether the batch may still cover a call at unix second
// now or later: it is not retired and its window has not ended. Every
// batch Covers accepts is Live.
func (b *Batch) Live(now int64) bool {
	return !b.Retired() && now < b.Token.NotAfter
}

// Covers reports whether the batch approves one more call by subject on
// server/tool at unix second now with amount (nil when the call declares
// none). A batch with amount limits never covers a call without an amount:
// a missing envelope is not a free pass.
func (b *Batch) Covers(subject, server, tool string, amount *Amount, now int64) bool {
	t := b.Token
	if b.Revoked || now < t.NotBefore || now >= t.NotAfter {
		return false
	}
	if t.Subject != "" && t.Subject != subject {
		return false
	}
	if !MatchPattern(t.ServerPattern, server) || !MatchPattern(t.ToolPattern, tool) {
		return false
	}
	if t.MaxCalls != nil && b.Usage.Calls >= *t.MaxCalls {
		return false
	}
	if t.MaxAmountPerCall != nil || t.MaxTotalAmount != nil {
		if amount == nil {
			return false
		}
		if t.MaxAmountPerCall != nil && (amount.Currency != t.MaxAmountPerCall.Currency || amount.Units > t.MaxAmountPerCall.Units) {
			return false
		}
		if t.MaxTotalAmount != nil && (amount.Currency != t.MaxTotalAmount.Currency || b.Usage.TotalAmount+amount.Units > t.MaxTotalAmount.Units) {
			return false
		}
	}
	return true
}

// Use records one covered call.
func (b *Batch) Use(amount *Amount) {
	b.Usage.Calls++
	if amount != nil {
		b.Usage.TotalAmount += amount.Units
	}
}
