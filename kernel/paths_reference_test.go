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

// This file keeps the path guards as they were before their cost was made
// linear (commit "kernel: the path guards cost linear time…"), renamed
// ref…, as the reference TestPathGuardsMatchReference compares the guards
// with: every verdict and reason must stay the same. Only the analysis
// (pathArgs) is cached on the Request; this copy recomputes it.

// refPathArg is one path-like string of the arguments, as the guards judge it.
type refPathArg struct {
	where   string   // JSON Pointer of the value, or "key at …" for an object key
	raw     string   // the string as sent
	forms   []string // cleaned readings of it; each is matched
	refused string   // why it is refused outright ("" if it is not)
	unknown string   // why no reading can be placed ("" if all can)
}

// describe names the argument in a reason: /path = "…".
func (a *refPathArg) describe() string {
	return fmt.Sprintf("argument %s = %s", a.where, refQuoteShort(a.raw))
}

// refQuoteShort quotes s for a receipt, escaping control characters and
// cutting it to maxQuotedPath bytes on a rune boundary.
func refQuoteShort(s string) string {
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
func refPathArgs(r *Request) ([]refPathArg, error) {
	args, err := r.arguments()
	if err != nil {
		return nil, err
	}
	w := refPathWalker{}
	w.walk(args, 0)
	return w.out, nil
}

// refPathWalker visits every string value and object key of the arguments.
// It keeps the location as a stack of JSON Pointer tokens and spells it
// out only for the strings that are path-like: most strings are not.
type refPathWalker struct {
	at  []string
	out []refPathArg
}

func (w *refPathWalker) walk(v any, depth int) {
	if depth > 64 { // bounded by the canonical decoder already
		return
	}
	switch t := v.(type) {
	case string:
		w.visit(t, "")
	case []any:
		for i, e := range t {
			w.at = append(w.at, strconv.Itoa(i))
			w.walk(e, depth+1)
			w.at = w.at[:len(w.at)-1]
		}
	case map[string]any:
		keys := slices.Collect(maps.Keys(t))
		if len(keys) > 1 {
			slices.Sort(keys) // the same call always gets the same reason
		}
		for _, k := range keys {
			w.at = append(w.at, k)
			w.visit(k, "key at ") // keys can carry paths too ({"/etc/passwd": "…"})
			w.walk(t[k], depth+1)
			w.at = w.at[:len(w.at)-1]
		}
	}
}

func (w *refPathWalker) visit(s, prefix string) {
	a, ok := refAnalyzePath(s)
	if !ok {
		return
	}
	var p jsontext.Pointer
	for _, tok := range w.at {
		p = p.AppendToken(tok)
	}
	if p == "" {
		p = "/"
	}
	a.where = prefix + string(p)
	w.out = append(w.out, a)
}

// refAnalyzePath decides whether s is path-like and, if so, how it reads.
//
// A string without line breaks is held to the strict rules: a path with
// control characters or surrounding whitespace is refused (some tools strip
// them, turning " /etc/passwd" into "/etc/passwd"). A string with line
// breaks is text (file contents, a message): it is not refused, but each of
// its lines is judged as a path, trimmed and with control characters
// removed, because some tools take one path per line and some trim.
func refAnalyzePath(s string) (refPathArg, bool) {
	a := refPathArg{raw: s}
	if strings.IndexByte(s, 0) >= 0 {
		// C-based tools end a path at NUL: "/etc/passwd\x00.txt" opens
		// /etc/passwd. No legitimate path contains one.
		a.refused = "contains a NUL byte"
		return a, true
	}
	if !strings.ContainsFunc(s, refIsLineBreak) {
		return a, a.addReadings(s, true)
	}
	pathLike := false
	for _, l := range strings.FieldsFunc(s, refIsLineBreak) {
		l = strings.TrimSpace(l)
		if a.addReadings(l, false) {
			pathLike = true
		}
		if stripped := strings.Map(refDropControl, l); stripped != l && a.addReadings(stripped, false) {
			pathLike = true
		}
		if a.refused != "" {
			return a, true
		}
	}
	return a, pathLike
}

func refIsLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

func refDropControl(r rune) rune {
	if unicode.IsControl(r) {
		return -1
	}
	return r
}

// addReadings adds the cleaned readings of one line (every percent-decoding
// stage of it) and reports whether any of them is path-like.
func (a *refPathArg) addReadings(line string, strict bool) bool {
	pathLike := false
	stage := line
	for round := 0; ; round++ {
		if a.addReading(stage, strict) {
			pathLike = true
		}
		next, changed := refPercentDecode(stage)
		if !changed {
			break
		}
		if round == maxPercentDecodes {
			// Deeper than any tool should decode: refuse it if decoding
			// on reveals a path, or if it is still encoded after
			// maxExtraPercentDecodes more rounds (each round is a pass
			// over the whole string: unbounded, this was quadratic).
			for extra := 0; !pathLike; extra++ {
				pathLike = refLooksLikePath(strings.TrimSpace(next)) || extra == maxExtraPercentDecodes
				more := false
				if next, more = refPercentDecode(next); !more {
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
func (a *refPathArg) addReading(x string, strict bool) bool {
	x = strings.ReplaceAll(x, `\`, "/")
	trimmed := strings.TrimSpace(strings.Map(refDropControl, x))
	if !refLooksLikePath(trimmed) {
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
	if u, ok := refFileURLPath(x); ok {
		readings = append(readings, u...)
	}
	for _, r := range readings {
		if r == "" {
			continue
		}
		clean := path.Clean(r)
		resolved, unknown := refResolveAliases(clean)
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

// refLooksLikePath: a separator, a home (~) or a relative (.) start, or a file: URL.
func refLooksLikePath(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, "~") || strings.HasPrefix(s, ".") || refHasPrefixFold(s, "file:")
}

func refHasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// refFileURLPath returns the local paths a file: URL names. A URL with a
// host other than localhost names //host/path (a UNC path), which is
// judged as such.
func refFileURLPath(s string) ([]string, bool) {
	if !refHasPrefixFold(s, "file:") {
		return nil, false
	}
	// As a naive tool reads it, too: the scheme cut off, any query and
	// fragment kept ("file:///tmp/x?/../../etc/passwd" is /etc/passwd
	// once cleaned, though the URL's path is /tmp/x).
	raw := s[len("file:"):]
	naive := []string{raw}
	if rest, ok := strings.CutPrefix(raw, "//"); ok {
		if refHasPrefixFold(rest, "localhost") {
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

// refPercentDecode decodes every valid %XX escape and leaves the rest as is,
// as lenient decoders do (url.PathUnescape would refuse the whole string
// on one stray "%", and a tool might not).
func refPercentDecode(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, false
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && refIsHex(s[i+1]) && refIsHex(s[i+2]) {
			b.WriteByte(refUnhex(s[i+1])<<4 | refUnhex(s[i+2]))
			i += 2
			changed = true
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), changed
}

func refIsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func refUnhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// refResolveAliases rewrites /proc/<pid>/root/… (and its per-thread form
// /proc/<pid>/task/<tid>/root/…) to the path it names, repeatedly. It
// reports paths whose target the kernel cannot know: open file descriptors
// (/dev/fd/N, /dev/stdin, /proc/<pid>/fd/N), working directories
// (/proc/<pid>/cwd), executables and mapped files.
func refResolveAliases(p string) (string, string) {
	for {
		if !strings.HasPrefix(p, "/proc/") && !strings.HasPrefix(p, "/dev/") {
			return p, ""
		}
		segs := strings.Split(p[1:], "/")
		switch {
		case segs[0] == "dev" && len(segs) >= 2:
			switch segs[1] {
			case "fd", "stdin", "stdout", "stderr":
				return p, "it refers to an open file descriptor, which could be any file"
			}
			return p, ""
		case segs[0] != "proc" || len(segs) < 3:
			return p, ""
		}
		i := 2 // the entry after /proc/<pid>
		if segs[2] == "task" && len(segs) >= 5 {
			i = 4 // /proc/<pid>/task/<tid>/<entry>
		}
		switch segs[i] {
		case "root":
			p = path.Clean("/" + strings.Join(segs[i+1:], "/"))
			continue
		case "cwd":
			return p, "it refers to a process's working directory, which could be anywhere"
		case "fd", "map_files", "exe":
			return p, "it refers to a file a process holds open, which could be any file"
		}
		return p, ""
	}
}

// refMatchAny reports the first pattern that name matches.
func refMatchAny(patterns []string, name string, fold bool) (string, bool) {
	if fold {
		name = refFoldCase(name)
	}
	for _, p := range patterns {
		q := p
		if fold {
			q = refFoldCase(p)
		}
		// Patterns were validated at load.
		if doublestar.MatchUnvalidated(q, name) {
			return p, true
		}
	}
	return "", false
}

// refCheckForbiddenPaths denies a path-like argument any reading of which
// matches a forbidden pattern. A relative path is also judged as if the
// tool's working directory were "/": the kernel cannot know it.
func refCheckForbiddenPaths(r *Request) (Result, error) {
	c := &r.Grant.Constraints
	if len(c.ForbiddenPaths) == 0 {
		return allow()
	}
	args, err := refPathArgs(r)
	if err != nil {
		return Result{Deny, GuardForbiddenPaths, err.Error()}, nil
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
			candidates := []string{f}
			if !strings.HasPrefix(f, "/") {
				candidates = append(candidates, path.Clean("/"+f))
			}
			for _, cand := range candidates {
				if p, ok := refMatchAny(c.ForbiddenPaths, cand, c.ForbiddenPathsCaseInsensitive); ok {
					how := ""
					if cand != a.raw {
						how = " (read as " + refQuoteShort(cand) + ")"
					}
					return Result{Deny, GuardForbiddenPaths, fmt.Sprintf("forbidden path: %s%s matches %q", a.describe(), how, p)}, nil
				}
			}
		}
	}
	return allow()
}

// refCheckAllowedPaths denies a path-like argument unless every reading of it
// matches an allowed pattern. Readings are matched as they are: a relative
// path matches only a relative pattern.
func refCheckAllowedPaths(r *Request) (Result, error) {
	c := &r.Grant.Constraints
	if len(c.AllowedPaths) == 0 {
		return allow()
	}
	args, err := refPathArgs(r)
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
			if _, ok := refMatchAny(c.AllowedPaths, f, false); !ok {
				how := ""
				if f != a.raw {
					how = " (read as " + refQuoteShort(f) + ")"
				}
				return Result{Deny, GuardAllowedPaths, fmt.Sprintf("path not allowed: %s%s matches no allowed_paths pattern", a.describe(), how)}, nil
			}
		}
	}
	return allow()
}

// refFoldCase maps every rune, lower- then upper-cased, to the smallest
// rune of its Unicode case-folding orbit. Lower-casing alone is not
// enough: U+017F "ſ" is already lower case, yet folds to "s" (and
// "/etc/paſswd" passed a case-insensitive "/etc/passwd"); folding alone
// keeps "ı" and "İ" apart from i, which NTFS and Go's ToLower do not.
func refFoldCase(s string) string {
	return strings.Map(func(r rune) rune {
		r = unicode.ToUpper(unicode.ToLower(r))
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}
