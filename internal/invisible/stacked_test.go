package invisible

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStackedMarks: a run of more than MaxMarks combining marks, or one
// holding the same mark twice in a row, is stacked (every mark of it); a
// letter with a few different marks is not (Vietnamese, a Devanagari
// conjunct), nor are marks that an escaped character (the combining
// grapheme joiner) splits into short runs.
func TestStackedMarks(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"acct-1" + strings.Repeat("\u0301", 5), "acct-1^^^^^"},
		{"e\u0301\u0301x", "e^^x"},
		{"e\u0301\u0302\u0301x", "e\u0301\u0302\u0301x"},
		{"Nguye\u0302\u0303n", "Nguye\u0302\u0303n"},
		{"a\u0301\u0302\u0303\u0304", "a\u0301\u0302\u0303\u0304"},
		{"a\u0301\u0302\u0303\u0304\u0305", "a^^^^^"},
		{"a\u0301\u0302\u034f\u0301\u0302", "a\u0301\u0302\u034f\u0301\u0302"},
		{"\u0915\u094d\u0937\u093f x\u20dd\u20dd", "\u0915\u094d\u0937\u093f x^^"},
		{"\u0301\u0301 \xff\u0301", "^^ \xff\u0301"},
	} {
		st := StackedMarks(c.in)
		var got strings.Builder
		for i := 0; i < len(c.in); {
			_, size := utf8.DecodeRuneInString(c.in[i:])
			if st.At(i) {
				got.WriteByte('^')
			} else {
				got.WriteString(c.in[i : i+size])
			}
			i += size
		}
		if got.String() != c.want {
			t.Errorf("StackedMarks(%+q) = %+q, want %+q", c.in, got.String(), c.want)
		}
		if HasStackedMarks(c.in) != strings.Contains(c.want, "^") {
			t.Errorf("HasStackedMarks(%+q) = %v", c.in, !strings.Contains(c.want, "^"))
		}
	}
}
