package canon

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Member names that differ only in letter case.
//
// Readers of JSON disagree about them: a map (CEL conditions, JSON
// pointers, the kernel's own guards) keeps "units" and "unitſ" apart, while
// a case-insensitive struct decoder (encoding/json, most JSON libraries
// mapping to classes) reads both as the field "units", the last one
// winning. A signature covers the JCS form, where members are sorted, so
// member order is unsigned and whoever holds an object could choose which
// spelling such a decoder keeps. chio therefore refuses any object in which
// two member names are equal under Unicode simple case folding (what
// strings.EqualFold and encoding/json implement: "a"/"A", "s"/"ſ" (U+017F),
// "k"/"K" (U+212A)) but not identical; identical names jsontext already
// refuses as duplicates.

// pairwiseMax is the member count up to which an object's names are compared
// pairwise with strings.EqualFold; larger objects use a map of fold keys.
const pairwiseMax = 16

// MayFold reports whether name holds an upper-case ASCII letter or a
// non-ASCII character. Of two names equal under folding but not identical,
// at least one does: the other ASCII characters fold only with upper-case
// ASCII letters and non-ASCII runes ('k' with U+212A, 's' with U+017F), or
// with nothing. So Check compares names only in documents holding a name
// for which MayFold is true (chio's own names are lower-case ASCII).
func MayFold(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// isName reports whether the string token just read is an object member's
// name rather than a value: the innermost object then holds an odd count of
// names and values.
func isName(dec *jsontext.Decoder) bool {
	kind, n := dec.StackIndex(dec.StackDepth())
	return kind == '{' && n%2 == 1
}

// checkFolding reads raw (which has passed Check's other rules) and refuses
// the first object holding two member names that differ only in case.
func checkFolding(raw []byte) error {
	d := decoders.Get().(*pooledDecoder)
	defer d.release()
	d.r.Reset(raw)
	d.dec.Reset(&d.r)
	dec := &d.dec
	var open []memberNames // one per object being read, innermost last
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return classify(err)
		}
		switch tok.Kind() {
		case '{':
			open = append(open, memberNames{})
		case '}':
			open = open[:len(open)-1]
		case '"':
			if isName(dec) {
				if err := open[len(open)-1].add(tok.String(), dec); err != nil {
					return err
				}
			}
		}
	}
}

// memberNames holds the names read so far in one object.
type memberNames struct {
	list   []string          // while there are at most pairwiseMax
	folded map[string]string // fold key → name, beyond that
}

// add records name, refusing it if it differs only in case from an earlier
// name of the same object.
func (m *memberNames) add(name string, dec *jsontext.Decoder) error {
	if m.folded == nil {
		for _, prev := range m.list {
			if strings.EqualFold(prev, name) {
				return caseCollision(prev, name, dec)
			}
		}
		if len(m.list) < pairwiseMax {
			m.list = append(m.list, name)
			return nil
		}
		m.folded = make(map[string]string, 2*pairwiseMax)
		for _, prev := range m.list {
			m.folded[FoldKey(prev)] = prev
		}
		m.list = nil
	}
	k := FoldKey(name)
	if prev, ok := m.folded[k]; ok {
		return caseCollision(prev, name, dec)
	}
	m.folded[k] = name
	return nil
}

// caseCollision names both members, escaping non-ASCII (%+q) so that look-
// alikes such as "unit\u017f" are visible, and the object holding them.
func caseCollision(prev, name string, dec *jsontext.Decoder) error {
	where := "the top-level object"
	if p := dec.StackPointer().Parent(); p != "" {
		where = fmt.Sprintf("the object at %q", p)
	}
	return fmt.Errorf("%w: member names %+q and %+q in %s differ only in letter case; chio matches names exactly and refuses such objects",
		ErrDuplicateKey, prev, name, where)
}

// FoldKey maps name to a key shared by exactly the names strings.EqualFold
// deems equal to it: each rune is replaced by the smallest rune of its
// simple folding orbit (unicode.SimpleFold cycles through the orbit).
// policy uses it too, to find tool names that differ only in case.
func FoldKey(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
