package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in a policy file. Line is 1-based; 0 means the problem
// concerns the whole file (it is too large, say).
type Error struct {
	File string
	Line int
	Msg  string
}

func (e Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Errors is every problem Load or Parse found, in line order. Callers get at
// it with errors.As:
//
//	var perr *policy.Errors
//	if errors.As(err, &perr) {
//		for _, e := range *perr { … }
//	}
type Errors []Error

// Error prints one problem per line as file:line: message.
func (e *Errors) Error() string {
	var b strings.Builder
	for i, x := range *e {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(x.Error())
	}
	return b.String()
}

// Unwrap lets errors.Is and errors.As look at each Error.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(*e))
	for i, x := range *e {
		out[i] = x
	}
	return out
}

// problems collects Errors against key paths, resolving each path to the
// line that defines it, and keeps at most MaxErrors of them.
type problems struct {
	file string
	pos  *positions
	list Errors
	// reported holds the paths that already have a problem, so that a value
	// the decoder rejected does not also fail validation as "missing".
	reported map[string]bool
	dropped  int
}

func newProblems(file string, pos *positions) *problems {
	return &problems{file: file, pos: pos, reported: map[string]bool{}}
}

// at records a problem with the value at path (a key path with array indices,
// such as grants.3.approval.quorum).
func (p *problems) at(path []string, format string, args ...any) {
	k := pathKey(path)
	if p.reported[k] {
		return
	}
	p.reported[k] = true
	p.line(p.pos.line(path), format, args...)
}

// line records a problem at a known line.
func (p *problems) line(line int, format string, args ...any) {
	if len(p.list) >= MaxErrors {
		p.dropped++
		return
	}
	p.list = append(p.list, Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// err returns the problems as *Errors in line order, or nil.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	list := slices.Clone(p.list)
	slices.SortStableFunc(list, func(a, b Error) int { return cmp.Compare(a.Line, b.Line) })
	if p.dropped > 0 {
		list = append(list, Error{File: p.file, Msg: fmt.Sprintf("…and %d more problems; fix the ones above first", p.dropped)})
	}
	return &list
}
