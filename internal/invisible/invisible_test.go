package invisible

import "testing"

// TestInvisibleAndVisible: each kind of character that draws nothing, only
// a blank, or reorders is invisible; letters, marks, symbols, emoji and
// spaces (which prose needs) are not.
func TestInvisibleAndVisible(t *testing.T) {
	for _, r := range []rune{
		'\u202e', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u2028', '\u2029', '\U000E0001', '\U000E0067', // Cf, Zl, Zp
		'\u034f', '\u115f', '\u1160', '\u3164', '\uffa0', '\u17b4', '\u17b5', // other default-ignorable
		'\u180b', '\u180c', '\u180d', '\u180f', '\ufe00', '\ufe0e', '\ufe0f', '\U000E0100', '\U000E01EF', // variation selectors
		'\u2065', '\U000E0000', '\U000E0FFF', // reserved default-ignorable
		'\u2800', '\U0001D159', // blank symbols
	} {
		if !Is(r) {
			t.Errorf("%U is not invisible", r)
		}
	}
	for _, r := range []rune{'a', 'é', '\u0301', '\u094d', '\u20e3', '€', '\u2764', '\U0001F468', '\U0001F3FD', '\u2801', ' ', '\u00a0', '\u3000', '退'} {
		if Is(r) {
			t.Errorf("%U is invisible", r)
		}
	}
}
