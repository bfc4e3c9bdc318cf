package kernel

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/go-json-experiment/json/jsontext"
)

// The path guards (forbidden_paths, allowed_paths) look at every string in
// the arguments (object keys too) that looks like a path, and judge it by
// every way a tool might read it: as written, percent-decoded (once or
// more), as a file: URL, cleaned of "." and ".." and repeated or
// backslashed separators, and with /proc/<pid>/root aliases resolved. A
// path the kernel cannot place — an open file descriptor, another
// process's working directory — is denied whenever a path rule applies.
// docs/platform.md says what the guard cannot know (symlinks, the tool's
// working directory, paths a tool assembles from several arguments).
//
// Their cost is linear in the arguments' size (TestPathGuardCostIsLinear,
// BenchmarkForbiddenPaths): a guard over its budget is a Deny, so a cost
// that grows faster denies large legitimate calls on a busy machine and
// lets any caller burn the kernel's CPU.

// pathArg is one path-like string of the arguments, as the guards judge it.
type pathArg struct {
	at      *pointerToken // where the value is, spelled out by where()
	key     bool          // the string is the object key at `at`
	raw     string        // the string as sent
	forms   []string      // cleaned readings of it; each is matched
	refused string        // why it is refused outright ("" if it is not)
	unknown string        // why no reading can be placed ("" if all can)
}

// describe names the argument in a reason: /path = "…".
func (a *pathArg) describe() string {
	return fmt.Sprintf("argument %s = %s", a.where(), quoteShort(a.raw))
}

// where is the JSON Pointer of the value, or "key at …" for an object key.
func (a *pathArg) where() string {
	var toks []string
	for t := a.at; t != nil; t = t.parent {
		toks = append(toks, t.tok)
	}
	var p jsontext.Pointer
	for i := len(toks) - 1; i >= 0; i-- {
		p = p.AppendToken(toks[i])
	}
	if p == "" {
		p = "/"
	}
	if a.key {
		return "key at " + string(p)
	}
	return string(p)
}

// pointerToken is one token of a location, linked to its parent's. A
// path-like string keeps its location as a link, spelled out only for a
// reason: spelling it out for every string cost the square of the
// arguments' size (many paths under a long key).
type pointerToken struct {
	parent *pointerToken
	tok    string
}

// quoteShort quotes s for a receipt, escaping control characters and
// cutting it to maxQuotedPath bytes on a rune boundary.
func quoteShort(s string) string {
	if len(s) <= maxQuotedPath {
		return fmt.Sprintf("%q", s)
	}
	n := maxQuotedPath
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%q…", s[:n])
}

// pathArgs returns the path-like strings of the arguments, analysed once
// per request for both guards.
func (r *Request) pathArgs() ([]pathArg, error) {
	if r.pathsDone {
		return r.paths, nil
	}
	args, err := r.arguments()
	if err != nil {
		return nil, err
	}
	w := pathWalker{}
	w.walk(args, 0)
	r.paths, r.pathsDone = w.out, true
	return w.out, nil
}

// pathWalker visits every string value and object key of the arguments.
type pathWalker struct {
	at  *pointerToken // the location being visited
	out []pathArg
}

func (w *pathWalker) walk(v any, depth int) {
	if depth > 64 { // bounded by the canonical decoder already
		return
	}
	switch t := v.(type) {
	case string:
		w.visit(t, false)
	case []any:
		parent := w.at
		for i, e := range t {
			w.at = &pointerToken{parent, strconv.Itoa(i)}
			w.walk(e, depth+1)
		}
		w.at = parent
	case map[string]any:
		keys := slices.Collect(maps.Keys(t))
		if len(keys) > 1 {
			slices.Sort(keys) // the same call always gets the same reason
		}
		parent := w.at
		for _, k := range keys {
			w.at = &pointerToken{parent, k}
			w.visit(k, true) // keys can carry paths too ({"/etc/passwd": "…"})
			w.walk(t[k], depth+1)
		}
		w.at = parent
	}
}

func (w *pathWalker) visit(s string, key bool) {
	a, ok := analyzePath(s)
	if !ok {
		return
	}
	a.at, a.key = w.at, key
	w.out = append(w.out, a)
}

// analyzePath decides whether s is path-like and, if so, how it reads.
//
// A string without line breaks is held to the strict rules: a path with
// control characters or surrounding whitespace is refused (some tools strip
// them, turning " /etc/passwd" into "/etc/passwd"). A string with line
// breaks is text (file contents, a message): it is not refused, but each of
// its lines is judged as a path, trimmed and with control characters
// removed, because some tools take one path per line and some trim.
func analyzePath(s string) (pathArg, bool) {
	a := pathArg{raw: s}
	if strings.IndexByte(s, 0) >= 0 {
		// C-based tools end a path at NUL: "/etc/passwd\x00.txt" opens
		// /etc/passwd. No legitimate path contains one.
		a.refused = "contains a NUL byte"
		return a, true
	}
	if !strings.ContainsFunc(s, isLineBreak) {
		return a, a.addReadings(s, true)
	}
	pathLike := false
	for _, l := range strings.FieldsFunc(s, isLineBreak) {
		l = strings.TrimSpace(l)
		if a.addReadings(l, false) {
			pathLike = true
		}
		if stripped := strings.Map(dropControl, l); stripped != l && a.addReadings(stripped, false) {
			pathLike = true
		}
		if a.refused != "" {
			return a, true
		}
	}
	return a, pathLike
}

func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

func dropControl(r rune) rune {
	if unicode.IsControl(r) {
		return -1
	}
	return r
}

// addReadings adds the cleaned readings of one line (every percent-decoding
// stage of it) and reports whether any of them is path-like.
func (a *pathArg) addReadings(line string, strict bool) bool {
	pathLike := false
	stage := line
	for round := 0; ; round++ {
		if a.addReading(stage, strict) {
			pathLike = true
		}
		next, changed := percentDecode(stage)
		if !changed {
			break
		}
		if round == maxPercentDecodes {
			// Deeper than any tool should decode: refuse it if decoding
			// on reveals a path, or if it is still encoded after
			// maxExtraPercentDecodes more rounds (each round is a pass
			// over the whole string: unbounded, this was quadratic).
			for extra := 0; !pathLike; extra++ {
				pathLike = looksLikePath(strings.TrimSpace(next)) || extra == maxExtraPercentDecodes
				more := false
				if next, more = percentDecode(next); !more {
					break
				}
			}
			if pathLike {
				a.refused = fmt.Sprintf("is percent-encoded more than %d times", maxPercentDecodes)
			}
			return pathLike
		}
		stage = next
	}
	return pathLike
}

// addReading adds one reading of a line, if it is path-like.
func (a *pathArg) addReading(x string, strict bool) bool {
	x = strings.ReplaceAll(x, `\`, "/")
	trimmed := strings.TrimSpace(strings.Map(dropControl, x))
	if !looksLikePath(trimmed) {
		return false
	}
	if a.refused != "" {
		return true
	}
	switch {
	case strings.IndexByte(x, 0) >= 0:
		a.refused = "contains a NUL byte (percent-encoded)"
		return true
	case strict && x != strings.TrimSpace(x):
		a.refused = "has leading or trailing whitespace"
		return true
	case strict && strings.IndexFunc(x, unicode.IsControl) >= 0:
		a.refused = "contains control characters"
		return true
	}
	readings := []string{x}
	if u, ok := fileURLPath(x); ok {
		readings = append(readings, u...)
	}
	for _, r := range readings {
		if r == "" {
			continue
		}
		clean := path.Clean(r)
		resolved, unknown := resolveAliases(clean)
		if unknown != "" && a.unknown == "" {
			a.unknown = fmt.Sprintf("%s: %s", resolved, unknown)
		}
		// Both: /proc/** may be forbidden too, and under allowed_paths the
		// alias itself must be allowed as well as what it names.
		a.forms = append(a.forms, clean)
		if resolved != clean {
			a.forms = append(a.forms, resolved)
		}
	}
	return true
}

// looksLikePath: a separator, a home (~) or a relative (.) start, or a file: URL.
func looksLikePath(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, "~") || strings.HasPrefix(s, ".") || hasPrefixFold(s, "file:")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// fileURLPath returns the local paths a file: URL names. A URL with a
// host other than localhost names //host/path (a UNC path), which is
// judged as such.
func fileURLPath(s string) ([]string, bool) {
	if !hasPrefixFold(s, "file:") {
		return nil, false
	}
	// As a naive tool reads it, too: the scheme cut off, any query and
	// fragment kept ("file:///tmp/x?/../../etc/passwd" is /etc/passwd
	// once cleaned, though the URL's path is /tmp/x).
	raw := s[len("file:"):]
	naive := []string{raw}
	if rest, ok := strings.CutPrefix(raw, "//"); ok {
		if hasPrefixFold(rest, "localhost") {
			rest = rest[len("localhost"):]
		}
		naive = append(naive, rest)
	}
	u, err := url.Parse(s)
	if err != nil {
		// Unparseable: judge what follows the scheme as a path.
		return append(naive, strings.TrimLeft(raw, "/")), true
	}
	p := u.Path
	if p == "" {
		p = u.Opaque
	}
	out := append(naive, p)
	if h := u.Host; h != "" && !strings.EqualFold(h, "localhost") {
		out = append(out, "//"+h+"/"+strings.TrimLeft(p, "/"))
	}
	return out, true
}

// percentDecode decodes every valid %XX escape and leaves the rest as is,
// as lenient decoders do (url.PathUnescape would refuse the whole string
// on one stray "%", and a tool might not).
func percentDecode(s string) (string, bool) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	changed := false
	for i >= 0 {
		b.WriteString(s[:i]) // up to the next "%"
		if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			s = s[i+3:]
			changed = true
		} else {
			b.WriteByte('%')
			s = s[i+1:]
		}
		i = strings.IndexByte(s, '%')
	}
	b.WriteString(s)
	return b.String(), changed
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// matchAny reports the index of the first pattern that name matches.
// Under case folding, both are folded (foldCase) by the caller: the
// patterns once per call, not once per name.
func matchAny(patterns []string, name string) (int, bool) {
	for i, p := range patterns {
		// Patterns were validated at load.
		if doublestar.MatchUnvalidated(p, name) {
			return i, true
		}
	}
	return 0, false
}

// checkForbiddenPaths denies a path-like argument any reading of which
// matches a forbidden pattern. A relative path is also judged as if the
// tool's working directory were "/": the kernel cannot know it.
func checkForbiddenPaths(r *Request) (Result, error) {
	c := &r.Grant.Constraints
	if len(c.ForbiddenPaths) == 0 {
		return allow()
	}
	args, err := r.pathArgs()
	if err != nil {
		return Result{Deny, GuardForbiddenPaths, err.Error()}, nil
	}
	fold := c.ForbiddenPathsCaseInsensitive
	patterns := c.ForbiddenPaths
	if fold {
		patterns = make([]string, len(c.ForbiddenPaths))
		for i, p := range c.ForbiddenPaths {
			patterns[i] = foldCase(p)
		}
	}
	for i := range args {
		a := &args[i]
		if a.refused != "" {
			return Result{Deny, GuardForbiddenPaths, a.describe() + " is refused: a path " + a.refused}, nil
		}
		if a.unknown != "" {
			return Result{Deny, GuardForbiddenPaths, a.describe() + " is refused: " + a.unknown}, nil
		}
		for _, f := range a.forms {
			for n, cand := range [2]string{f, ""} {
				if n == 1 { // a relative path, rooted
					if strings.HasPrefix(f, "/") {
						break
					}
					cand = path.Clean("/" + f)
				}
				name := cand
				if fold {
					name = foldCase(cand)
				}
				if i, ok := matchAny(patterns, name); ok {
					how := ""
					if cand != a.raw {
						how = " (read as " + quoteShort(cand) + ")"
					}
					return Result{Deny, GuardForbiddenPaths, fmt.Sprintf("forbidden path: %s%s matches %q", a.describe(), how, c.ForbiddenPaths[i])}, nil
				}
			}
		}
	}
	return allow()
}

// checkAllowedPaths denies a path-like argument unless every reading of it
// matches an allowed pattern. Readings are matched as they are: a relative
// path matches only a relative pattern.
func checkAllowedPaths(r *Request) (Result, error) {
	c := &r.Grant.Constraints
	if len(c.AllowedPaths) == 0 {
		return allow()
	}
	args, err := r.pathArgs()
	if err != nil {
		return Result{Deny, GuardAllowedPaths, err.Error()}, nil
	}
	for i := range args {
		a := &args[i]
		if a.refused != "" {
			return Result{Deny, GuardAllowedPaths, a.describe() + " is refused: a path " + a.refused}, nil
		}
		if a.unknown != "" {
			return Result{Deny, GuardAllowedPaths, a.describe() + " is refused: " + a.unknown}, nil
		}
		for _, f := range a.forms {
			if _, ok := matchAny(c.AllowedPaths, f); !ok {
				how := ""
				if f != a.raw {
					how = " (read as " + quoteShort(f) + ")"
				}
				return Result{Deny, GuardAllowedPaths, fmt.Sprintf("path not allowed: %s%s matches no allowed_paths pattern", a.describe(), how)}, nil
			}
		}
	}
	return allow()
}

// foldCase maps every rune to the smallest rune of its Unicode case-folding
// orbit, so two strings fold alike when strings.EqualFold says they are
// equal. Lower-casing is not enough: U+017F "ſ" is already lower case,
// yet folds to "s" (and "/etc/paſswd" passed a case-insensitive
// "/etc/passwd"). Folding is not enough either: it keeps "ı" (U+0131)
// and "İ" (U+0130) apart from i, yet NTFS compares names upper-cased,
// which takes ı to I ("/srv/prıvate" is /srv/private there), and Go's
// ToLower takes İ to i. So each rune is first lower-cased, then
// upper-cased (only those two change orbit so).
func foldCase(s string) string {
	return strings.Map(foldRune, s)
}

func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		// An ASCII letter's orbit is its two cases and, for k and s, a
		// non-ASCII rune (K, ſ): the least is the upper case.
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	r = unicode.ToUpper(unicode.ToLower(r))
	if r < utf8.RuneSelf {
		return r // ı and İ: I, the least of i's orbit
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
