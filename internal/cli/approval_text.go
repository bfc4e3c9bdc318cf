package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/chiokernel/chio/internal/invisible"
	"github.com/chiokernel/chio/internal/textdir"
)

// Text from a request, made safe to print.
//
// A request's summary, intent, questions and arguments come from the agent
// (and a call's error from the tool). Printed raw, a carriage return or an
// escape sequence rewrites what the approver's terminal shows ("for 450000
// USD" repainted as "for 450 USD", a line erased), and a bidi override
// reorders it. The kernel refuses control and format characters in the
// text it shows (kernel/shown_text.go), but not in tool arguments, and a
// request stored before that check may hold them: so everything printed
// from a request goes through shown or shownJSON, which write each rune a
// terminal would act on or draw invisibly as a visible escape. (So do the
// joiners and selectors the kernel accepts in prose, such as the ZWJ of an
// emoji sequence: raw code points are shown as sent, not as drawn.)

// shown returns s with every rune that is not graphic (strconv.IsGraphic:
// letters, marks, numbers, punctuation, symbols and spaces — so not
// control characters, Unicode format characters such as U+202E, line
// separators, nor private-use characters, which draw as whatever a font
// puts there) or that is graphic but draws nothing or only a blank
// (invisible.Is: variation selectors, the combining grapheme joiner,
// Hangul fillers, U+2800) written as \uXXXX or \UXXXXXXXX, each space
// that follows a space as an escape too (escapeShown), each byte of
// invalid UTF-8 as \xNN, and a backslash that would read as the start of
// one of these escapes as \\. So is a stacked run of combining marks
// (invisible.StackedMarks: more than four, or the same mark twice in a
// row), which draws as one character or none. Other printable text is
// unchanged.
func shown(s string) string {
	return escapeShown(s, false)
}

// shownNoted is shown for a value an approver reads, followed by
// storedOrderNote when it holds right-to-left text.
func shownNoted(s string) string { return shown(s) + storedOrderNote(s) }

// shownJSONNoted is shownJSON followed by storedOrderNote: for a line a
// person reads, never for JSON output a program reads.
func shownJSONNoted(raw []byte) string { return shownJSON(raw) + storedOrderNote(string(raw)) }

// storedOrderNote says that s holds right-to-left text printed as stored.
// A terminal that applies the Unicode Bidirectional Algorithm draws
// digits after a Hebrew or Arabic letter in its direction: the argument
// "שלום 1234 5678" as "5678 1234 םולש", with no control character at all.
// A terminal has no markup to force an order, and the bytes are what the
// tool receives, so they are kept and the note tells the approver that
// what looks reordered is not (others leave the order alone).
func storedOrderNote(s string) string {
	if !textdir.HasRTL(s) {
		return ""
	}
	return "  [" + textdir.StoredOrderNote + "]"
}

// shownJSON returns JSON text from a request as one line that stays valid
// JSON with the same value: compacted (so no whitespace, which could be a
// carriage return, is left outside strings), then every non-graphic rune,
// all of which are now inside strings, written as a JSON \u escape, as is
// every non-ASCII letter of a member name that mixes scripts
// (invisible.LookalikeNames: "t\u043e", a Cyrillic о, next to "to"). Text
// that is not valid JSON is printed as shown prints text.
func shownJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return shown(string(raw))
	}
	return escapeShown(b.String(), true)
}

// escapeShown also writes every space (category Zs) that follows another
// as an escape. A value is printed on one line, which a terminal wraps
// where its width ends: a run of spaces drew a blank that ended a visual
// line as a real one ends, and the text after it started the next visual
// line indented as the views' own labels are ("  amount:   1 USD" under
// `watch`'s lines, "AMOUNT" and its padded column under `show`'s), a line
// of the request's own to the reader. With runs marked, no value draws a
// blank wider than one space. In JSON text (jsonEscapes) only spaces inside
// strings are values: the indentation of printJSON's lines is left as is.
func escapeShown(s string, jsonEscapes bool) string {
	var b strings.Builder
	afterSpace := false
	inString, afterBackslash := false, false // JSON: inside a string; after a backslash in one
	stacked, names := invisible.StackedMarks(s), invisible.Stacked(nil)
	if jsonEscapes {
		names = invisible.LookalikeNames(s)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		space := unicode.Is(unicode.Zs, r) && (inString || !jsonEscapes)
		switch {
		case afterBackslash:
			afterBackslash = false
		case r == '\\':
			afterBackslash = inString
		case r == '"':
			inString = !inString
		}
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' && !jsonEscapes && i+1 < len(s) && strings.IndexByte("uUx", s[i+1]) >= 0:
			// Text that reads as an escape ("\u000a" as sent) is told
			// from the escape of a rune (a line break): written \\.
			b.WriteString(`\\`)
		case !escapedWhenShown(r) && !(space && afterSpace) && !stacked.At(i) && !names.At(i):
			b.WriteString(s[i : i+size])
		case jsonEscapes:
			writeJSONEscape(&b, r)
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		afterSpace = space
		i += size
	}
	return b.String()
}

// escapedWhenShown reports whether shown writes r as an escape: r is not
// graphic (a control, a format character such as U+202E, a line
// separator, a private-use character), or is graphic but draws nothing or
// only a blank (invisible.Is).
func escapedWhenShown(r rune) bool { return !strconv.IsGraphic(r) || invisible.Is(r) }

// writeJSONEscape writes r as a JSON \u escape: two, a UTF-16 surrogate
// pair, past U+FFFF. Inside a JSON string it stands for r itself.
func writeJSONEscape(b *strings.Builder, r rune) {
	if r > 0xffff {
		hi, lo := utf16.EncodeRune(r)
		fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}
