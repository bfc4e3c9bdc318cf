package kernel

import (
	"testing"

	"github.com/chiokernel/chio/policy"
)

// TestAskOptionsSpellEmojiAndPunctuation: options agents write every day
// use U+FE0F to spell an emoji — a keycap ("1️⃣" = '1' U+FE0F U+20E3),
// "⚠️", "✔️" — or French punctuation spacing (a no-break space before
// "!"). 16952e7 checked options as names and refused them all (found by
// this session's review); options are prose, compared with each other
// for look-alikes instead (lookalikeOptions).
func TestAskOptionsSpellEmojiAndPunctuation(t *testing.T) {
	for _, opt := range []string{"1\uFE0F\u20E3 small refund", "\u26A0\uFE0F proceed anyway", "\u2714\uFE0F ship it", "Oui, d'accord\u00A0!"} {
		args := `{"prompt":"Which option?","questions":[{"id":"q1","text":"Pick one","type":"single","options":["` +
			opt + `","no"]}]}`
		if err := checkHITLArgs(policy.ToolAsk, []byte(args)); err != nil {
			t.Errorf("option %q refused: %v", opt, err)
		}
	}
}
