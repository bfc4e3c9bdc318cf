package policy

// The rules for what a policy may use as a name: ids, labels, URLs,
// host:port addresses and Slack user ids. CheckName applies the same rule
// to the names a call carries.

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	invisibleChar "github.com/chiokernel/chio/internal/invisible"
)

// checkID accepts identifiers: ids, tool names, operations, categories.
// CheckName reports why s is not a valid id or name (server, tool,
// operation, grant): the rule the policy's own names follow, so that a
// call naming something no policy could name is refused as malformed.
func CheckName(s string) error { return checkID(s) }

func checkID(s string) error {
	if err := checkLabel(s); err != nil {
		return err
	}
	if strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return fmt.Errorf("must not contain spaces")
	}
	return nil
}

// checkLabel accepts human-readable names: actions, contact handles. It
// refuses control characters and invisible or text-direction characters.
func checkLabel(s string) error { return checkText(s, false) }

// checkDisplayName accepts an approver's display_name: a label, except
// that the zero-width non-joiner and joiner (U+200C, U+200D) are spelling
// there, not tricks — Persian, Urdu and Indic names are written with them,
// and ZWJ builds emoji sequences — so each may stand between two visible
// characters. (The kernel's rule for prose shown to approvers,
// kernel/shown_text.go, lets them pass in a similar way, after a visible
// character; here a joiner must also be followed by one: at an end,
// beside a space or another invisible character it only hides.) Bidi
// controls and every other invisible character stay refused, and every
// channel shows display names escaped. Ids and names that identify servers, tools, operations and
// grants admit no joiner (checkID).
func checkDisplayName(s string) error { return checkText(s, true) }

// displayNameKey is what a person reads in display name s: two approvers
// of one grant whose display names have the same key could be told apart
// only by their public keys. It is s case-folded in Unicode compatibility
// composition (NFKC_Casefold: "é" and "e"+U+0301 are the same text, so
// are "Alice", full-width "Ａｌｉｃｅ" and mathematical bold "𝐀𝐥𝐢𝐜𝐞", a
// "ﬁ" ligature and "fi"; and "Alice" and "alice", "Straße" and "STRASSE",
// are easily taken for each other in "denied by alice"), without the
// joiners checkDisplayName lets through, with every run of white space
// one U+0020 and none at the ends. Look-alikes across scripts (Latin "a",
// Cyrillic "а") are not caught.
func displayNameKey(s string) string {
	// Folding may undo a composition (and NFKC a folding): NFKC, fold,
	// NFKC again, as Unicode's NFKC_Casefold is defined. A Caser holds
	// state: one per call.
	folded := norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
	var b strings.Builder
	space := false
	for _, r := range folded {
		switch {
		case r == zwnj || r == zwj:
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

// checkText is checkLabel, and with joiners checkDisplayName.
func checkText(s string, joiners bool) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("must not be blank")
	case len(s) > MaxNameLen:
		return fmt.Errorf("is %d bytes; the limit is %d", len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("is not valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("must not contain control characters")
	}
	if i := invisibleAt(s, joiners); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		if joiners && (r == zwnj || r == zwj) {
			return fmt.Errorf("must not contain invisible or text-direction characters (U+%04X; a zero-width "+
				"joiner or non-joiner may only stand between two visible characters)", r)
		}
		return fmt.Errorf("must not contain invisible or text-direction characters (U+%04X)", r)
	}
	return nil
}

const (
	zwnj = '\u200C' // zero-width non-joiner
	zwj  = '\u200D' // zero-width joiner
)

// invisibleAt returns the byte offset of the first invisible character
// in valid UTF-8 s, or -1. With joiners, a ZWNJ or ZWJ whose neighbours
// on both sides are visible is not counted.
func invisibleAt(s string, joiners bool) int {
	prev := rune(-1)
	for i, r := range s {
		if invisible(r) {
			next, size := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
			if !(joiners && (r == zwnj || r == zwj) && visible(prev) && size > 0 && visible(next)) {
				return i
			}
		}
		prev = r
	}
	return -1
}

// visible reports a character that draws something: not a space, control
// or invisible character (nor the -1 invisibleAt uses for "none").
func visible(r rune) bool {
	return r >= 0 && !unicode.IsSpace(r) && !unicode.IsControl(r) && !invisible(r)
}

// invisible reports a character that draws nothing (or only a blank) or
// reorders the text around it, so that a name holding it can look like
// another name (or the same name spelled plainly): Unicode format
// characters (category Cf: soft hyphen, zero-width space and joiners, bidi
// marks, embeddings, overrides and isolates, word joiner, BOM, tag
// characters), line and paragraph separators, variation selectors, the
// other default-ignorable code points (Hangul fillers, combining grapheme
// joiner, ...) and blank symbols (U+2800): the one table the kernel and
// every view use too (internal/invisible).
func invisible(r rune) bool { return invisibleChar.Is(r) }

// checkURL accepts an absolute http(s) URL without credentials.
func checkURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an absolute http:// or https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("must name a host")
	case u.User != nil:
		return fmt.Errorf("must not contain a user name or password; secrets come from the environment")
	case u.Port() != "" && !validPort(u.Port(), false):
		return fmt.Errorf("port must be a number from 1 to 65535")
	}
	return nil
}

// shownURL is s as an error quotes it: a "user:password@" part (a secret,
// which checkURL refuses) is shown as "…@", so the refusal does not carry
// it into the output and logs that keep errors. Of a URL that does not
// parse, or parses with no host (a typo for "https://": "https:user:pw@h"
// is opaque, "https:///user:pw@h" all path), all before its last "@" may
// be credentials and is not shown.
func shownURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err == nil && u.User == nil && u.Host != "":
		return s
	case err == nil && u.User != nil:
		u.User = nil
		return u.Scheme + "://…@" + strings.TrimPrefix(u.String(), u.Scheme+"://")
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return "…" + s[i:]
	}
	return s
}

// checkHostPort accepts host:port; zeroOK allows port 0 (listen on any free
// port, which tests use).
func checkHostPort(s string, zeroOK bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("must be host:port, like \"127.0.0.1:7420\"")
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("host %q is not a host name or IP address", host)
	}
	if !validPort(port, zeroOK) {
		if zeroOK {
			return fmt.Errorf("port must be a number from 0 to 65535")
		}
		return fmt.Errorf("port must be a number from 1 to 65535")
	}
	return nil
}

func validPort(p string, zeroOK bool) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n <= 65535 && (n > 0 || zeroOK && n == 0) && p[0] != '+' && p[0] != '-'
}

// slackUserIDRE is an immutable Slack user id (custodial signing keys on it).
var slackUserIDRE = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)
