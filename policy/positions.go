package policy

import (
	"bytes"
	"strconv"
	"strings"
)

// positions maps key paths to the line that defines them. A path is the
// chain of keys with array indices as decimal strings:
// ["grants", "3", "approval", "quorum"].
//
// BurntSushi/toml knows key positions too, but keeps one per dotted name, so
// every [[grants]] table would be reported at the last one's line; hence this
// small scanner of our own.
type positions struct {
	lines map[string]int
}

// pathKey joins a path with a byte no key can contain unquoted, so that the
// quoted key "a.b" and the path a.b stay distinct.
func pathKey(path []string) string { return strings.Join(path, "\x00") }

// line returns the line of path, or of its nearest recorded ancestor: a key
// left out of the file (a missing required field) is reported at the line of
// the table that should have held it.
func (p *positions) line(path []string) int {
	if p == nil {
		return 0
	}
	for n := len(path); n > 0; n-- {
		if l, ok := p.lines[pathKey(path[:n])]; ok {
			return l
		}
	}
	return 0
}

// maxRecordedElems bounds how many elements of one array get their own line;
// later ones share the array's line. It keeps a file of one huge array from
// costing a map entry per element.
const maxRecordedElems = 4096

// scanPositions records the line on which every table, key and array element
// of a TOML document starts. It also reports the first line nested deeper than
// MaxDepth (0 if none).
//
// It runs before the TOML parser, as the depth gate, so it must cope with any
// bytes: it never fails, always advances, and recurses at most MaxDepth deep.
// On input that is not valid TOML its positions are merely useless, and the
// parser then reports the syntax error.
func scanPositions(src []byte) (pos *positions, deepLine int) {
	s := &scanner{src: src, line: 1, pos: map[string]int{}, aot: map[string]int{}}
	s.run()
	return &positions{lines: s.pos}, s.deep
}

type scanner struct {
	src   []byte
	i     int
	line  int
	pos   map[string]int
	aot   map[string]int // array-of-tables path → elements seen so far
	table []string       // path of the current [table] or [[array]] element
	deep  int
}

func (s *scanner) run() {
	for s.i < len(s.src) {
		s.skipSpace(true)
		if s.i >= len(s.src) {
			return
		}
		start := s.i
		if s.src[s.i] == '[' {
			s.header()
		} else {
			s.keyValue(s.table)
		}
		if s.i == start {
			s.i++ // not TOML; keep moving, the parser will say why
		}
	}
}

func (s *scanner) peek(c byte) bool { return s.i < len(s.src) && s.src[s.i] == c }

func (s *scanner) advance(n int) { s.i = min(s.i+n, len(s.src)) }

// skipSpace skips blanks and comments, and newlines too when nl is set.
func (s *scanner) skipSpace(nl bool) {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\r':
			s.i++
		case '\n':
			if !nl {
				return
			}
			s.line++
			s.i++
		case '#':
			for s.i < len(s.src) && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

func (s *scanner) record(path []string, line int) {
	k := pathKey(path)
	if _, ok := s.pos[k]; !ok {
		s.pos[k] = line
	}
}

// fits reports whether a path of n parts is within MaxDepth. When it is not,
// it records the line and stops the scan: the file will be refused anyway.
func (s *scanner) fits(n int) bool {
	if n <= MaxDepth {
		return true
	}
	if s.deep == 0 {
		s.deep = s.line
	}
	s.i = len(s.src)
	return false
}

// header handles [table] and [[array.of.tables]].
func (s *scanner) header() {
	line := s.line
	s.i++
	array := s.peek('[')
	if array {
		s.i++
	}
	key := s.key()
	s.skipSpace(false)
	if s.peek(']') {
		s.i++
		if array && s.peek(']') {
			s.i++
		}
	}
	// Each part may add an array index to the path, hence 2×.
	if len(key) == 0 || !s.fits(2*len(key)) {
		return
	}
	// Earlier parts that name arrays of tables refer to their last element.
	var path []string
	for _, part := range key[:len(key)-1] {
		path = append(path, part)
		if n := s.aot[pathKey(path)]; n > 0 {
			path = append(path, strconv.Itoa(n-1))
		}
		s.record(path, line)
	}
	path = append(path, key[len(key)-1])
	if array {
		s.record(path, line)
		k := pathKey(path)
		n := s.aot[k]
		s.aot[k] = n + 1
		path = append(path, strconv.Itoa(n))
	}
	s.record(path, line)
	s.table = path
}

// key reads a dotted key. It keeps at most MaxDepth+1 parts, enough for the
// caller to see that the key is too deep.
func (s *scanner) key() []string {
	var parts []string
	for {
		s.skipSpace(false)
		if s.i >= len(s.src) {
			return parts
		}
		var part string
		switch c := s.src[s.i]; {
		case c == '"' || c == '\'':
			part = s.quotedKey(c)
		case isBare(c):
			start := s.i
			for s.i < len(s.src) && isBare(s.src[s.i]) {
				s.i++
			}
			part = string(s.src[start:s.i])
		default:
			return parts
		}
		if len(parts) <= MaxDepth {
			parts = append(parts, part)
		}
		s.skipSpace(false)
		if !s.peek('.') {
			return parts
		}
		s.i++
	}
}

func isBare(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

func (s *scanner) quotedKey(q byte) string {
	s.i++
	start := s.i
	for s.i < len(s.src) && s.src[s.i] != q && s.src[s.i] != '\n' {
		if q == '"' && s.src[s.i] == '\\' && s.i+1 < len(s.src) && s.src[s.i+1] != '\n' {
			s.i++
		}
		s.i++
	}
	raw := string(s.src[start:s.i])
	if s.peek(q) {
		s.i++
	}
	if q == '"' && strings.ContainsRune(raw, '\\') {
		if u, err := strconv.Unquote(`"` + raw + `"`); err == nil {
			return u
		}
	}
	return raw
}

// keyValue handles `key = value` relative to base.
func (s *scanner) keyValue(base []string) {
	line := s.line
	key := s.key()
	if len(key) == 0 || !s.fits(len(base)+len(key)) {
		return
	}
	path := make([]string, 0, len(base)+len(key))
	path = append(path, base...)
	for _, part := range key {
		path = append(path, part)
		s.record(path, line)
	}
	s.skipSpace(false)
	if !s.peek('=') {
		return
	}
	s.i++
	s.value(path)
}

func (s *scanner) value(path []string) {
	s.skipSpace(false)
	if s.i >= len(s.src) {
		return
	}
	switch s.src[s.i] {
	case '"', '\'':
		s.str(s.src[s.i])
	case '[':
		s.array(path)
	case '{':
		s.inlineTable(path)
	default: // numbers, booleans, dates: up to the next delimiter
		for s.i < len(s.src) && !endsScalar(s.src[s.i]) {
			s.i++
		}
	}
}

// str skips a string of any of TOML's four kinds, counting the newlines of
// multi-line strings.
func (s *scanner) str(q byte) {
	triple := []byte{q, q, q}
	if bytes.HasPrefix(s.src[s.i:], triple) {
		s.i += 3
		for s.i < len(s.src) {
			switch c := s.src[s.i]; {
			case c == '\\' && q == '"':
				if s.i+1 < len(s.src) && s.src[s.i+1] == '\n' {
					s.line++
				}
				s.advance(2) // an escaped quote does not close the string
				continue
			case c == '\n':
				s.line++
			case c == q && bytes.HasPrefix(s.src[s.i:], triple):
				s.i += 3
				// """ may be followed by up to two quotes that belong to the content.
				for k := 0; k < 2 && s.peek(q); k++ {
					s.i++
				}
				return
			}
			s.i++
		}
		return
	}
	s.i++
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		c := s.src[s.i]
		if c == q {
			s.i++
			return
		}
		if c == '\\' && q == '"' && s.i+1 < len(s.src) && s.src[s.i+1] != '\n' {
			s.i++
		}
		s.i++
	}
}

func (s *scanner) array(path []string) {
	if !s.fits(len(path) + 1) {
		return
	}
	s.i++
	for n := 0; s.i < len(s.src); n++ {
		s.skipSpace(true)
		if s.peek(']') {
			s.i++
			return
		}
		if s.i >= len(s.src) {
			return
		}
		elem := make([]string, len(path)+1)
		copy(elem, path)
		elem[len(path)] = strconv.Itoa(n)
		if n < maxRecordedElems {
			s.record(elem, s.line)
		}
		start := s.i
		s.value(elem)
		s.skipSpace(true)
		if s.peek(',') {
			s.i++
		} else if s.i == start && !s.peek(']') {
			s.advance(1)
		}
	}
}

func (s *scanner) inlineTable(path []string) {
	if !s.fits(len(path) + 1) {
		return
	}
	s.i++
	for s.i < len(s.src) {
		s.skipSpace(true) // TOML 1.1 allows newlines in inline tables
		if s.i >= len(s.src) {
			return
		}
		switch s.src[s.i] {
		case '}':
			s.i++
			return
		case ',':
			s.i++
			continue
		}
		start := s.i
		s.keyValue(path)
		if s.i == start {
			s.i++
		}
	}
}

func endsScalar(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == '\n' || c == '#'
}
