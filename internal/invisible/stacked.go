package invisible

import (
	"unicode"
	"unicode/utf8"
)

// MaxMarks is the longest run of combining marks a view draws as it is:
// more than the scripts that stack marks put on one letter (Vietnamese
// two, Hebrew and Indic vowel signs with their points three or four).
const MaxMarks = 4

// Stacked marks which bytes of a string a view writes as escapes beyond
// the characters ShownEscaped names: a stacked run of combining marks
// (StackedMarks), the letters of a look-alike member name
// (LookalikeNames); nil when none.
type Stacked []bool

// At reports whether the byte at i is marked.
func (st Stacked) At(i int) bool { return i >= 0 && i < len(st) && st[i] }

// StackedMarks finds the runs of combining marks (category M) in s that a
// view writes as escapes, as it writes invisible characters: a run longer
// than MaxMarks, or one holding a mark right after the same mark. Marks
// pile on the character before them: three hundred acute accents after
// "acct-1" draw as one character (or are cut off above the line), and
// the same accent twice draws as once, while the tool receives every one.
//
// A mark a view escapes anyway (ShownEscaped: the combining grapheme
// joiner, the variation selectors) ends a run, as its escape does on
// screen. The dashboard's visible.js applies the same rule (MARK_RUN).
func StackedMarks(s string) Stacked {
	var st Stacked
	for i := 0; i < len(s); {
		end, n, twice := markRun(s, i)
		if n > MaxMarks || twice {
			if st == nil {
				st = make(Stacked, len(s))
			}
			for j := i; j < end; j++ {
				st[j] = true
			}
		}
		if end == i {
			_, size := utf8.DecodeRuneInString(s[i:])
			end = i + size
		}
		i = end
	}
	return st
}

// HasStackedMarks reports whether s holds a run StackedMarks escapes.
func HasStackedMarks(s string) bool { return StackedMarks(s) != nil }

// markRun returns where the run of combining marks starting at i ends,
// how many marks it holds, and whether one follows the same mark.
func markRun(s string, i int) (end, n int, twice bool) {
	prev := utf8.RuneError
	for end = i; end < len(s); {
		r, size := utf8.DecodeRuneInString(s[end:])
		if !unicode.Is(unicode.M, r) || ShownEscaped(r) || (r == utf8.RuneError && size == 1) {
			break
		}
		twice = twice || r == prev
		prev, n, end = r, n+1, end+size
	}
	return end, n, twice
}
