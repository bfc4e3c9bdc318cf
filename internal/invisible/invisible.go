// Package invisible names the characters that draw nothing, draw only a
// blank where a letter would be, or reorder the text around them: what an
// agent could use to make the text an approver reads differ from the text
// it sent ("approve 450 USD" with a hidden or reordered part). The kernel
// refuses them in the text it shows (kernel/shown_text.go), policy in its
// names (policy/names.go), and every view that prints raw code points
// writes them as visible escapes (the CLI, Slack, email; the dashboard's
// visible.js mirrors Is in JavaScript). The views escape a stacked run of
// combining marks the same way (StackedMarks, stacked.go), and the
// non-ASCII letters of a member name mixing scripts (LookalikeNames).
package invisible

import "unicode"

// Is reports whether r is invisible in that sense:
//
//   - a format character (category Cf: bidi embeddings, overrides and
//     isolates, LRM/RLM, the zero-width space, non-joiner and joiner, word
//     joiner, BOM, soft hyphen, tag characters);
//   - a line or paragraph separator (Zl, Zp);
//   - a default-ignorable code point of another category. Unicode derives
//     Default_Ignorable_Code_Point (DerivedCoreProperties.txt) as
//     Other_Default_Ignorable_Code_Point + Cf + Variation_Selector, less
//     white space and a few visible format characters; Go has no table for
//     the derived property but has both source tables, so their union
//     with Cf is used (a superset: the few format characters Unicode
//     leaves out, such as U+0600 ARABIC NUMBER SIGN, are refused as format
//     characters anyway). That adds the combining grapheme joiner U+034F,
//     the variation selectors U+FE00–FE0F and U+E0100–E01EF, the Mongolian
//     free variation selectors U+180B–180D and U+180F, the Hangul fillers
//     U+115F, U+1160, U+3164 and U+FFA0, the Khmer inherent vowels U+17B4
//     and U+17B5, and the unassigned code points Unicode reserves as
//     default-ignorable (U+2065, U+E0000–E0FFF), so that a character
//     assigned there later is already invisible here;
//   - a blank symbol (blankSymbol).
//
// Ordinary spaces (category Zs) are not here: prose uses them. Control
// characters are not either: each caller has its own rule for them.
func Is(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Variation_Selector,
		unicode.Other_Default_Ignorable_Code_Point) || blankSymbol(r)
}

// blankSymbol: graphic characters, not default-ignorable nor white space,
// whose glyph is empty, so a purpose or a name made of them looks blank
// and one inside a word looks like a space that trimming and collapsing
// do not touch. They are known tricks for blank user names.
func blankSymbol(r rune) bool {
	switch r {
	case '\u2800', // BRAILLE PATTERN BLANK (the dot-free cell)
		'\U0001D159': // MUSICAL SYMBOL NULL NOTEHEAD
		return true
	}
	return false
}
