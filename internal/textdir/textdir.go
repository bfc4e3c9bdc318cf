// Package textdir finds the right-to-left text in what approvers read, so
// that every view can show it in the order it is stored.
//
// The Unicode Bidirectional Algorithm reorders text with no control
// character at all: numbers after a Hebrew or Arabic letter take its
// right-to-left direction, so "שלום 1234 5678" is drawn "5678 1234 םולש"
// by a browser, a mail client or Slack, and the approver reads an account
// number with its groups swapped while the tool receives 1234 5678. A
// value starting with such a letter also turns a whole paragraph right to
// left where the direction is detected (HTML dir=auto, Slack). The views
// use Runs to draw right-to-left words as words inside text that is
// otherwise forced left to right (HTML), or escape the letters (Slack), or
// say so next to the value (terminals): StoredOrderNote.
package textdir

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
)

// StoredOrderNote is what a view says next to a value holding
// right-to-left text that it shows in stored order.
const StoredOrderNote = "contains right-to-left text; shown in stored order"

// IsRTL reports whether r is a strong right-to-left character: bidi class
// R (Hebrew and the other right-to-left scripts) or AL (Arabic letters).
// Arabic-Indic digits (class AN) are not: they take a direction, as
// European digits do, so they never join a right-to-left run (Runs).
func IsRTL(r rune) bool {
	p, _ := bidi.LookupRune(r)
	c := p.Class()
	return c == bidi.R || c == bidi.AL
}

// Reorders reports whether r makes the algorithm reorder the text around
// it with no control character: a right-to-left character (IsRTL), or an
// Arabic number (class AN: Arabic-Indic digits and their separators). Two
// groups of Arabic-Indic digits alone are drawn swapped, "٣٣٣٣ ٤٤٤٤" as
// "٤٤٤٤ ٣٣٣٣": the space between them takes their right-to-left
// direction.
func Reorders(r rune) bool {
	p, _ := bidi.LookupRune(r)
	c := p.Class()
	return c == bidi.R || c == bidi.AL || c == bidi.AN
}

// HasRTL reports whether s holds a character that Reorders: text a view
// must show in stored order.
func HasRTL(s string) bool { return strings.ContainsFunc(s, Reorders) }

// Run is a piece of a string: a run of right-to-left words, or what lies
// between such runs.
type Run struct {
	Text string
	RTL  bool
}

// Runs splits s into its right-to-left runs and the rest, in stored
// order; their texts joined are s. A right-to-left run is a right-to-left
// character followed by right-to-left characters, combining marks (class
// NSM), and U+0020 spaces that a right-to-left character follows: never
// a digit, a letter of another direction or punctuation, so that drawing
// the run right to left can only reverse it whole, which is what reading
// it right to left expects.
func Runs(s string) []Run {
	var out []Run
	rest := 0 // start of what is not yet in out
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !IsRTL(r) {
			i += size
			continue
		}
		end := runEnd(s, i)
		if i > rest {
			out = append(out, Run{Text: s[rest:i]})
		}
		out = append(out, Run{Text: s[i:end], RTL: true})
		i, rest = end, end
	}
	if rest < len(s) {
		out = append(out, Run{Text: s[rest:]})
	}
	return out
}

// runEnd returns where the right-to-left run starting at i ends.
func runEnd(s string, i int) int {
	end := i
	for j := i; j < len(s); {
		r, size := utf8.DecodeRuneInString(s[j:])
		switch {
		case IsRTL(r):
			j += size
			end = j
		case r == ' ' && end == j:
			// Spaces join only if a right-to-left character follows them.
			k := j
			for k < len(s) && s[k] == ' ' {
				k++
			}
			if next, _ := utf8.DecodeRuneInString(s[k:]); k < len(s) && IsRTL(next) {
				j = k
				continue
			}
			return end
		case isMark(r) && end == j:
			j += size
			end = j
		default:
			return end
		}
	}
	return end
}

// isMark: a non-spacing mark (vowel points, harakat), which belongs to the
// letter before it.
func isMark(r rune) bool {
	p, _ := bidi.LookupRune(r)
	return p.Class() == bidi.NSM
}
