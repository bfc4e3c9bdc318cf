package invisible

import "unicode"

// ShownEscaped reports whether a view writes r as a visible escape
// (\uE000) rather than drawing it: an invisible character (Is), or a
// private-use one (category Co: U+E000–F8FF and planes 15 and 16), which
// draws as whatever a font puts there, or a box, and so can stand for
// anything. The kernel does not refuse private-use characters in the text
// it shows; the views escape them.
func ShownEscaped(r rune) bool {
	return Is(r) || unicode.Is(unicode.Co, r)
}
