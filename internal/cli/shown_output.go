package cli

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A tool's output, printed by `chio call` and `chio await`.
//
// The output is JSON from the tool, and its strings may hold characters
// that act on a terminal or draw invisibly: a bidi override (U+202E)
// reordering the rest of the line, a zero-width space, a private-use
// character, a C1 control such as U+009B (the one-byte CSI of some
// terminals), DEL. JSON encoding escapes only the C0 controls. So every
// character shown escapes (escapedWhenShown) is written as a JSON \u
// escape inside the string that holds it: the printed text is still JSON
// and equal in value to the tool's output — a program parsing it reads
// the same strings — while a terminal draws the escape instead of obeying
// the character. This is done whatever stdout is: what a person sees and
// what a script logs are the same text. The bytes were not the tool's
// anyway (--output json indents them, jsonl compacts them).

// shownOutput is the tool's output as the table output prints it: the
// tool's bytes, except that inside strings each escapedWhenShown
// character is written as a JSON \u escape, and a carriage return outside
// strings (JSON whitespace, but it moves the cursor back over the line)
// that no line feed follows is left out. Output that is not valid JSON
// (no tool of chio's produces it) is printed as shown prints text.
func shownOutput(raw []byte) string {
	if !json.Valid(raw) || !utf8.Valid(raw) {
		return shown(string(raw))
	}
	var b strings.Builder
	inString := false
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case inString && c == '\\': // an escape: the backslash and the next byte, both ASCII
			b.Write(raw[i : i+2])
			i += 2
		case c == '"':
			inString = !inString
			b.WriteByte(c)
			i++
		case !inString && c == '\r' && (i+1 == len(raw) || raw[i+1] != '\n'):
			i++
		case !inString:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if escapedWhenShown(r) {
				writeJSONEscape(&b, r)
			} else {
				b.Write(raw[i : i+size])
			}
			i += size
		}
	}
	return b.String()
}
