package schemaref

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// part describes the parts of an instance a descending subschema applies
// to: some members of an object, some elements of an array, the member
// names (propertyNames), or anything (a keyword read conservatively).
// overlap may only answer false when no part can be both: the cost check
// errs toward counting two applications, never toward missing one.
type part struct {
	kind partKind
	// members: exactly name (exact), the names pattern matches (pattern
	// != ""), the names not excluded (additional), or any name.
	name, pattern string
	re            *regexp.Regexp // pattern compiled; nil if Go cannot
	exact         bool
	additional    *exclusion
	// elements: indexes lo ≤ i < hi.
	lo, hi int
}

type partKind int

const (
	anyPart partKind = iota
	members
	elements
	memberNames
)

// exclusion is what additionalProperties leaves out: its schema's
// properties and the names its patternProperties match.
type exclusion struct {
	names    []string
	patterns []string
	res      []*regexp.Regexp // the patterns Go compiles
}

// partOf is the part a subschema under keyword kw (at member, its name or
// index there; "" for a single subschema) of the schema object m applies
// to; applied is false for $defs and definitions, which only hold
// schemas to refer to.
func partOf(kw, member string, m map[string]any) (at part, applied bool) {
	switch kw {
	case "$defs", "definitions":
		return part{}, false
	case "properties":
		return part{kind: members, name: member, exact: true}, true
	case "patternProperties":
		re, _ := regexp.Compile(member)
		return part{kind: members, pattern: member, re: re}, true
	case "additionalProperties":
		ex := &exclusion{}
		if props, ok := only(m, "properties").(map[string]any); ok {
			for n := range props {
				ex.names = append(ex.names, n)
			}
		}
		if pats, ok := only(m, "patternProperties").(map[string]any); ok {
			for p := range pats {
				ex.patterns = append(ex.patterns, p)
				if re, err := regexp.Compile(p); err == nil {
					ex.res = append(ex.res, re)
				}
			}
		}
		return part{kind: members, additional: ex}, true
	case "unevaluatedProperties":
		return part{kind: members}, true
	case "propertyNames":
		return part{kind: memberNames}, true
	case "prefixItems", "items":
		if i, err := strconv.Atoi(member); err == nil && member != "" { // a list: one index each
			return part{kind: elements, lo: i, hi: i + 1}, true
		}
		// A single items schema follows prefixItems (2020-12).
		return part{kind: elements, lo: listLen(only(m, "prefixItems")), hi: math.MaxInt}, true
	case "additionalItems": // follows a list of items (draft-07)
		return part{kind: elements, lo: listLen(only(m, "items")), hi: math.MaxInt}, true
	case "contains", "unevaluatedItems":
		return part{kind: elements, hi: math.MaxInt}, true
	}
	return part{}, true // contentSchema, or anything else: any part
}

// only is m's member matching kw case-insensitively, when there is exactly
// one (with several, which one the validator reads is not known: nil).
func only(m map[string]any, kw string) any {
	var v any
	n := 0
	for name, x := range m {
		if strings.EqualFold(name, kw) {
			v, n = x, n+1
		}
	}
	if n != 1 {
		return nil
	}
	return v
}

func listLen(v any) int {
	l, _ := v.([]any)
	return len(l)
}

// overlap reports whether some part of some instance can be both a and b.
func overlap(a, b part) bool {
	if a.kind == anyPart || b.kind == anyPart {
		return true
	}
	if a.kind != b.kind {
		return false // an object's member is not an array's element
	}
	switch a.kind {
	case elements:
		return a.lo < b.hi && b.lo < a.hi
	case members:
		if !a.exact {
			a, b = b, a // an exact name first, if there is one
		}
		switch {
		case a.exact && b.exact:
			return a.name == b.name
		case a.exact && b.pattern != "":
			return b.re == nil || b.re.MatchString(a.name) // Go's regexp, unanchored, as jsonschema-go
		case a.exact && b.additional != nil:
			return !b.additional.excludes(a.name)
		case a.pattern != "" && b.additional != nil:
			return !slices.Contains(b.additional.patterns, a.pattern)
		case b.pattern != "" && a.additional != nil:
			return !slices.Contains(a.additional.patterns, b.pattern)
		}
	}
	return true
}

func (e *exclusion) excludes(name string) bool {
	if slices.Contains(e.names, name) {
		return true
	}
	for _, re := range e.res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
