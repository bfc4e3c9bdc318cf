package kernel

import (
	"errors"
	"testing"
)

// FuzzParseIntent: whatever an agent sends, an accepted intent is within
// every cap approvers rely on, and a refusal is always ErrBadCall.
func FuzzParseIntent(f *testing.F) {
	f.Add([]byte(`{"purpose":"refund","max_amount":{"units":450,"currency":"USD"},"action_category":"financial","context":{"order":"A-1"}}`))
	f.Add([]byte(`{"purpose":"` + string(make([]byte, MaxPurposeLen+1)) + `"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		gi, err := parseIntent(raw)
		if err != nil {
			if !errors.Is(err, ErrBadCall) {
				t.Fatalf("refusal is not ErrBadCall: %v", err)
			}
			return
		}
		if gi == nil {
			return
		}
		if len(raw) > MaxIntentBytes || len(gi.Purpose) > MaxPurposeLen || len(gi.ActionCategory) > MaxActionCategoryLen ||
			len(gi.Context) > MaxIntentContextBytes {
			t.Fatalf("accepted an intent over its caps: %d bytes, purpose %d, category %d, context %d",
				len(raw), len(gi.Purpose), len(gi.ActionCategory), len(gi.Context))
		}
	})
}
