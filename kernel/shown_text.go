package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/chiokernel/chio/internal/invisible"
)

// Text the agent writes for approvers to read.
//
// The governed intent's purpose and action category, and the prompt,
// questions and options of confirm / ask, are shown as text: on terminals
// (`chio approval show`, `watch`), in the dashboard, in email and Slack.
// A carriage return or an escape sequence there rewrites what a terminal
// shows ("for 450000 USD" repainted as "for 450 USD"); a bidi override
// reorders what a page shows; a zero-width or other invisible character
// (a variation selector, a Hangul filler, tag characters spelling a hidden
// sentence) hides text or makes two strings look the same. The parameter
// hash binds these strings, so they are refused, never cleaned: a call
// must be approved as sent. Tool arguments are not restricted (a tool may
// need any string); every view escapes them instead.
//
// The rule, for every such string: no control character (C0 including
// newline and tab, DEL, C1) and no invisible character (invisible.Is:
// format characters, line and paragraph separators, the other
// default-ignorable code points, blank symbols). Such text is one line.
//
// In prose (a purpose, a prompt, a question's text, the context's values)
// three kinds of invisible character are spelling, and pass where they
// spell something (proseSpelling). In names (a currency, an action
// category, a question id, the context's member names) nothing
// invisible passes, nor a space other than U+0020: a no-break or other
// wide space looks like U+0020, so two different names would look the
// same.

// checkShownText refuses prose s if it holds a character the rule above
// refuses, naming the field, the character and where it is.
func checkShownText(field, s string) error { return checkShown(field, s, false) }

// checkShownName is checkShownText for a name: no exceptions, and no
// space but U+0020, and that only between words. A space at either end or
// two in a row make two names look the same ("DHL" and "DHL " offered as
// two options of one question).
func checkShownName(field, s string) error {
	if strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") || strings.Contains(s, "  ") {
		return fmt.Errorf("%w: %s %q has a space at an end or two in a row: a name looks like another that way",
			ErrBadCall, field, s)
	}
	return checkShown(field, s, true)
}

func checkShown(field, s string, name bool) error {
	// after is the kind of character before the one at i.
	after := afterNothing
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !name && r == blackFlag {
			if n := subdivisionTags(s[i+size:]); n > 0 {
				i, after = i+size+n, afterShows // the flag with its tags
				continue
			}
		}
		switch {
		case name && unicode.Is(unicode.Zs, r) && r != ' ':
			return fmt.Errorf("%w: %s holds %U at byte %d: a name may hold no space but U+0020 (a no-break or "+
				"other wide space looks like it)", ErrBadCall, field, r, i)
		case !unicode.IsControl(r) && !invisible.Is(r):
			after = afterNothing
			if !unicode.IsSpace(r) {
				after = afterVisible
			}
		case !name && proseSpelling(r, after):
			after = afterShows
			if r == zwnj || r == zwj {
				after = afterNothing // a joiner joins the next character: no selector, no second joiner
			}
		case !name && (proseSpelling(r, afterVisible) || isTag(r)):
			return fmt.Errorf("%w: %s holds %U at byte %d: in text shown to approvers a zero-width joiner or "+
				"non-joiner may only follow a visible character, a variation selector U+FE0E or U+FE0F only "+
				"a visible character with none already, and tag characters only spell an England, Scotland or "+
				"Wales flag", ErrBadCall, field, r, i)
		default:
			return fmt.Errorf("%w: %s holds %U at byte %d: text shown to approvers must be one line without control "+
				"or invisible characters (bidi overrides, zero-width characters, variation selectors, fillers)",
				ErrBadCall, field, r, i)
		}
		i += size
	}
	return nil
}

// What the character before the current one was, for proseSpelling.
const (
	afterNothing = iota // the start, a space, or a joiner
	afterVisible        // a visible character
	afterShows          // a visible character with its selector, or a flag with its tags
)

const (
	zwnj      = '\u200C'     // ZERO WIDTH NON-JOINER
	zwj       = '\u200D'     // ZERO WIDTH JOINER
	vs15      = '\uFE0E'     // VARIATION SELECTOR-15: text presentation
	vs16      = '\uFE0F'     // VARIATION SELECTOR-16: emoji presentation
	blackFlag = '\U0001F3F4' // WAVING BLACK FLAG, the base of subdivision flags
)

// proseSpelling reports whether the invisible character r is spelling in
// prose after a character of kind after. Each exception is safe because it
// only changes how its neighbours are drawn (joined or not, as emoji or as
// text), never their order, and because at most a selector and a joiner
// may follow each visible character: that carries a few bits per
// character at most, never text a reader or a language model would read.
// A run of them, or one after a space or at the start, could carry any
// data unseen, so those are refused.
//
//   - ZWNJ and ZWJ, after a visible character (or an emoji with its
//     selector): Persian, Urdu and Indic scripts are written with them
//     (می‌خواهم, क्‍ष, ශ්‍රී), and ZWJ builds emoji such as 👨‍👩‍👧 and 🏳️‍🌈.
//   - the presentation selectors VS15 and VS16, right after a visible
//     character: ❤️, 1️⃣ and ↩︎ are spelled with them. The other variation
//     selectors (mathematical, CJK and Mongolian variants, and the 256 that
//     "smuggle" a byte each after an emoji) stay refused.
//
// The tag characters of a flag are checked whole, by subdivisionTags.
// None of these reorders anything, and views that print raw code points
// escape them like any other invisible character.
func proseSpelling(r rune, after int) bool {
	switch r {
	case zwnj, zwj:
		return after != afterNothing
	case vs15, vs16:
		return after == afterVisible
	}
	return false
}

// subdivisionTags returns the length of the tag characters that make the
// black flag before s the flag of England, Scotland or Wales (the only
// subdivision flags Unicode recommends for general interchange), or 0.
// Tag characters anywhere else are refused: they spell ASCII invisibly
// (U+E0000 + each letter), so a run of them is a hidden sentence that a
// language model reading the text would still decode.
func subdivisionTags(s string) int {
	for _, code := range []string{"gbeng", "gbsct", "gbwls"} {
		var tags strings.Builder
		for _, c := range code {
			tags.WriteRune(0xE0000 + c)
		}
		tags.WriteRune(0xE007F) // CANCEL TAG ends the sequence
		if strings.HasPrefix(s, tags.String()) {
			return tags.Len()
		}
	}
	return 0
}

// isTag: the tag characters U+E0020–E007F.
func isTag(r rune) bool { return r >= 0xE0020 && r <= 0xE007F }

// checkShownJSON applies checkShownName to every member name in raw and
// checkShownText to every string value, at any depth. raw has already
// passed canon's checks.
func checkShownJSON(field string, raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	// One frame per open container: an object expects a member name next,
	// or a value; an array only values.
	type frame struct{ object, nameNext bool }
	var open []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadCall, field, err)
		}
		var top *frame
		if len(open) > 0 {
			top = &open[len(open)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			open = open[:len(open)-1]
			continue
		}
		if top != nil && top.nameNext { // a member name
			if err := checkShownName(field, tok.(string)); err != nil {
				return err
			}
			top.nameNext = false
			continue
		}
		// A value: after it, an object expects a name again.
		if top != nil && top.object {
			top.nameNext = true
		}
		switch t := tok.(type) {
		case json.Delim: // '{' or '['
			open = append(open, frame{object: t == '{', nameNext: t == '{'})
		case string:
			if err := checkShownText(field, t); err != nil {
				return err
			}
		}
	}
}

// lookalikeOptions reports two options of one question that an approver
// cannot tell apart: equal once every space is one U+0020, spaces at the
// ends are dropped, and the invisible characters prose may hold (joiners,
// presentation selectors, flag tags) are removed, and after Unicode
// canonical composition (NFC: "é" and "e"+U+0301, KELVIN SIGN and "K",
// GREEK QUESTION MARK and ";" are the same text, drawn the same). "DHL"
// and "DHL ", or "UPS ground" and "UPS<U+00A0>ground", offered together
// would let the approver pick one while meaning the other. Look-alikes
// across scripts (Latin "a", Cyrillic "а") are not caught.
func lookalikeOptions(options []string) (int, int, bool) {
	seen := make(map[string]int, len(options))
	for i, o := range options {
		k := lookalikeKey(o)
		if j, dup := seen[k]; dup {
			return j, i, true
		}
		seen[k] = i
	}
	return 0, 0, false
}

func lookalikeKey(s string) string {
	var b strings.Builder
	space := false
	for _, r := range norm.NFC.String(s) {
		switch {
		case invisible.Is(r):
			continue
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
