package approval

import "strings"

// ValidPattern accepts an exact name, "*", or "prefix*".
func ValidPattern(p string) bool {
	if p == "" || len(p) > 256 {
		return false
	}
	i := strings.IndexByte(p, '*')
	return i < 0 || i == len(p)-1
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
