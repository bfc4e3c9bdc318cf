package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
)

// Text the agent writes for approvers to read.
//
// The governed intent's purpose and action category, and the prompt,
// questions and options of confirm / ask, are shown as text: on terminals
// (`chio approval show`, `watch`), in the dashboard, in email and Slack.
// A carriage return or an escape sequence there rewrites what a terminal
// shows ("for 450000 USD" repainted as "for 450 USD"), and a bidi override
// or a zero-width character reorders or hides what a page shows. The
// parameter hash binds these strings, so they are refused, never cleaned:
// a call must be approved as sent. Tool arguments are not restricted (a
// tool may need any string); every view escapes them instead.

// shownTextRefused reports whether r may not appear in text shown to
// approvers: control characters (C0 including newline and tab, DEL, C1),
// Unicode format characters (category Cf: bidi embeddings, overrides and
// isolates, LRM/RLM, zero-width space, word joiner, BOM, soft hyphen) and
// the line and paragraph separators. Such text is one line.
//
// In prose (a purpose, a prompt, a question's text, the context's values)
// three kinds of format character are spelling, not tricks, and pass: the
// zero-width non-joiner and joiner (Persian, Urdu and Indic scripts write
// with them; ZWJ builds emoji such as 👨‍👩‍👧) and the tag characters of
// emoji flag sequences. They reorder nothing; views that show raw code
// points escape them like any other format character. In names (a
// currency, an action category, a question id or option, the context's
// member names) they are refused too (shownNameRefused): there an
// invisible joiner makes two different names look the same.
func shownTextRefused(r rune) bool {
	if joinerOrTag(r) {
		return false
	}
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// shownNameRefused is shownTextRefused without the prose exceptions.
func shownNameRefused(r rune) bool {
	return joinerOrTag(r) || shownTextRefused(r)
}

// joinerOrTag: ZWNJ, ZWJ, and the tag characters of emoji flag sequences.
func joinerOrTag(r rune) bool {
	return r == '\u200C' || r == '\u200D' || r >= 0xE0020 && r <= 0xE007F
}

// checkShownText refuses prose s if it holds a character shownTextRefused
// refuses, naming the field, the character and where it is.
func checkShownText(field, s string) error { return checkShown(field, s, shownTextRefused) }

// checkShownName is checkShownText for a name (shownNameRefused).
func checkShownName(field, s string) error { return checkShown(field, s, shownNameRefused) }

func checkShown(field, s string, refused func(rune) bool) error {
	for i, r := range s {
		if refused(r) {
			return fmt.Errorf("%w: %s holds %U at byte %d: text shown to approvers must be one line without control or "+
				"Unicode format characters (bidi overrides, zero-width characters)", ErrBadCall, field, r, i)
		}
	}
	return nil
}

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
