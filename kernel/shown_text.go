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
// isolates, LRM/RLM, zero-width space and joiners, word joiner, BOM, soft
// hyphen) and the line and paragraph separators. Such text is one line.
func shownTextRefused(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// checkShownText refuses s if it holds a character shownTextRefused
// refuses, naming the field, the character and where it is.
func checkShownText(field, s string) error {
	for i, r := range s {
		if shownTextRefused(r) {
			return fmt.Errorf("%w: %s holds %U at byte %d: text shown to approvers must be one line without control or "+
				"Unicode format characters (bidi overrides, zero-width characters)", ErrBadCall, field, r, i)
		}
	}
	return nil
}

// checkShownJSON applies checkShownText to every string in raw, member
// names included, at any depth. raw has already passed canon's checks.
func checkShownJSON(field string, raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadCall, field, err)
		}
		if s, ok := tok.(string); ok {
			if err := checkShownText(field, s); err != nil {
				return err
			}
		}
	}
}
